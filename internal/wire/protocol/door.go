package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// MethodGatewayRefused (executor → daemon, notification, revision 4):
// the executor's gateway relay turned connections away at its door. The
// executor sums them (one message per kind and account a second at
// most); the daemon audits each message as gateway_refused, for the
// executor's person: it is her executor's word about her relay.
const MethodGatewayRefused = "gateway_refused"

// Why the relay refused a connection (GatewayRefusedParams.Reason).
const (
	// RefusedAnotherAccount: the kernel says another account made the
	// client's socket.
	RefusedAnotherAccount = "another_account"
	// RefusedNotATask: her own process, but of no task that runs now
	// (a terminal, an exec, a warm agent between turns, what outlived
	// its task).
	RefusedNotATask = "not_a_task"
	// RefusedTaskBound: the task has Limit connections open already.
	RefusedTaskBound = "task_bound"
	// RefusedUnknown: the relay could not tell who holds the socket (the
	// kernel's table unreadable, the client gone): it fails closed.
	RefusedUnknown = "unknown"
)

// GatewayRefusedParams are Count connections refused for Reason since the
// last message of that kind: from UID (the client socket's owner, when
// the kernel said), for Task (the task whose bound was reached).
type GatewayRefusedParams struct {
	Reason string  `json:"reason"`
	UID    *uint32 `json:"uid,omitempty"`
	Task   string  `json:"task_id,omitempty"`
	Count  int     `json:"count"`
}

// Validate checks the fields.
func (p GatewayRefusedParams) Validate() error {
	switch {
	case p.Reason != RefusedAnotherAccount && p.Reason != RefusedNotATask && p.Reason != RefusedTaskBound && p.Reason != RefusedUnknown:
		return rpc.InvalidParams("reason", "one of another_account, not_a_task, task_bound, unknown")
	case p.Count < 1:
		return rpc.InvalidParams("count", "at least 1")
	case len(p.Task) > 64:
		return rpc.InvalidParams("task_id", "at most 64 bytes")
	}
	return nil
}
