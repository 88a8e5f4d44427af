package protocol

import (
	"strconv"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Warm agents across the host: an executor sees only its own user's, so
// it tells the daemon which it keeps, and the daemon, which hears from
// every executor, asks for the least recently used back beyond the host's
// cap (agents.warm_per_host).
const (
	// MethodWarmAgents (executor → daemon, notification) is the
	// executor's whole set of warm agents, sent whenever it changes; the
	// latest one replaces what came before.
	MethodWarmAgents = "warm_agents"
	// MethodReleaseWarmAgent (daemon → executor) stops one warm agent if
	// it is still warm and idle.
	MethodReleaseWarmAgent = "release_warm_agent"
)

// MaxWarmAgents bounds one report: far above any sensible warm_per_user,
// and a bound on what the daemon keeps for one executor.
const MaxWarmAgents = 1024

// WarmAgent is one agent process an executor keeps for its session's
// next prompt.
type WarmAgent struct {
	SessionID  string `json:"session_id"`
	Tool       string `json:"agentic_tool"`
	LastUsedMS int64  `json:"last_used_ms"` // end of its last turn, unix ms
	// Prewarmed: started ahead of the session's first prompt, no turn
	// run yet (LastUsedMS is its start). The host's cap releases these
	// first: no conversation is lost with them.
	Prewarmed bool `json:"prewarmed,omitempty"`
}

func (a WarmAgent) validate(field string) error {
	switch {
	case a.SessionID == "":
		return rpc.InvalidParams(field+".session_id", "required")
	case a.Tool == "":
		return rpc.InvalidParams(field+".agentic_tool", "required")
	case a.LastUsedMS <= 0:
		return rpc.InvalidParams(field+".last_used_ms", "must be positive")
	}
	return nil
}

// WarmAgentsParams is an executor's warm agents, all of them (none: an
// empty list).
type WarmAgentsParams struct {
	Agents []WarmAgent `json:"agents"`
}

// Validate checks each agent and the count.
func (p WarmAgentsParams) Validate() error {
	if len(p.Agents) > MaxWarmAgents {
		return rpc.InvalidParams("agents", "more than "+strconv.Itoa(MaxWarmAgents))
	}
	for i, a := range p.Agents {
		if err := a.validate("agents[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseWarmAgentParams names the warm agent to stop. LastUsedMS is the
// use the daemon saw: an agent used after it (the daemon's view was
// stale) is kept; 0 releases whatever is warm.
type ReleaseWarmAgentParams struct {
	SessionID  string `json:"session_id"`
	Tool       string `json:"agentic_tool"`
	LastUsedMS int64  `json:"last_used_ms,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Validate checks the fields.
func (p ReleaseWarmAgentParams) Validate() error {
	switch {
	case p.SessionID == "":
		return rpc.InvalidParams("session_id", "required")
	case p.Tool == "":
		return rpc.InvalidParams("agentic_tool", "required")
	case p.LastUsedMS < 0:
		return rpc.InvalidParams("last_used_ms", "must not be negative")
	}
	return nil
}

// ReleaseWarmAgentResult says whether a warm agent was stopped: false
// when the session has none, it is running a turn, or it was used since.
type ReleaseWarmAgentResult struct {
	Released bool `json:"released"`
}
