package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// PingResult is ping's reply (ping takes no params).
type PingResult struct {
	Pong      bool   `json:"pong"`
	Timestamp int64  `json:"timestamp"` // Unix milliseconds
	PID       int    `json:"pid"`
	UID       int    `json:"uid"`
	User      string `json:"user"`
	Version   string `json:"version"`
	UptimeMS  int64  `json:"uptime_ms"`
	// LandlockABI is the Landlock ABI the executor's own process gets
	// (0: none, or refused by its unit's or container's seccomp filter):
	// what its tasks' sandbox can be, as seen from where they run.
	LandlockABI int `json:"landlock_abi,omitempty"`
	// SandboxView is "namespace" when a confined task's filesystem view
	// can be built here (user, mount and PID namespaces), otherwise why
	// not: what the sandbox's guarantees then rest on (Landlock alone).
	SandboxView string `json:"sandbox_view,omitempty"`
	// Protocol is the executor's Revision (0 from executors before it).
	Protocol int `json:"protocol,omitempty"`
}

// ShutdownParams asks the executor to stop, letting in-flight work finish
// for up to TimeoutMS.
type ShutdownParams struct {
	Reason    string `json:"reason"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// Validate checks the fields.
func (p ShutdownParams) Validate() error {
	if p.TimeoutMS < 0 {
		return rpc.InvalidParams("timeout_ms", "must not be negative")
	}
	return nil
}

// Shutdown statuses: how the executor left its work.
const (
	ShutdownIdle        = "idle"        // nothing was running
	ShutdownCompleted   = "completed"   // in-flight work finished in time
	ShutdownInterrupted = "interrupted" // in-flight work was cancelled
)

// ShutdownResult says how the executor left its work.
type ShutdownResult struct {
	Status string `json:"status"`
}
