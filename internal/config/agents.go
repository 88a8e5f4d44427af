package config

import "fmt"

// Agents bounds the warm agents an executor keeps: after a prompt's turn
// the session's agent process stays for the next prompt (no start-up, no
// reload of the conversation) until it has been idle WarmIdleMS, or is
// the least recently used beyond WarmPerUser, or the warm agents' memory
// (resident, whole process groups) passes WarmMemoryBytes. Read by the
// executor; one executor serves one user, so the per-user figures are
// the executor's own. WarmPerHost is the daemon's, which hears from every
// executor on the host.
type Agents struct {
	WarmIdleMS      int64 `yaml:"warm_idle_ms"`      // 0: no warm agents
	WarmPerUser     int   `yaml:"warm_per_user"`     // 0: no warm agents
	WarmMemoryBytes int64 `yaml:"warm_memory_bytes"` // of one user's warm agents together
	// WarmHostMinAvailableBytes is the host-wide bound: an executor keeps
	// no warm agent while the host's MemAvailable is below it (0: off).
	WarmHostMinAvailableBytes int64 `yaml:"warm_host_min_available_bytes"`
	// WarmPerHost bounds every user's warm agents together: beyond it the
	// daemon asks for the least recently used back (0: no host cap).
	WarmPerHost int `yaml:"warm_per_host"`
	// PrewarmIdleMS bounds a pre-warmed agent (started ahead of its
	// session's first prompt, issue 40) that no prompt has used: it is
	// stopped after this long (0: no pre-warming). It is a warm agent for
	// every other bound, but never evicts one that has run a turn.
	PrewarmIdleMS int64 `yaml:"prewarm_idle_ms"`
	// PrewarmAtExecutorStart: when a person's executor starts for
	// anything but a prompt (her terminal, the page's files, an exec),
	// the agent of the session she used last there is pre-warmed, as a
	// follow-up of it would run.
	PrewarmAtExecutorStart bool `yaml:"prewarm_at_executor_start"`
}

// DefaultAgents are the warm-agent bounds a file leaves out; see
// packaging/config.yaml for the measurements behind them.
func DefaultAgents() Agents {
	return Agents{WarmIdleMS: 300_000, WarmPerUser: 4, WarmMemoryBytes: 2 << 30, WarmHostMinAvailableBytes: 1 << 30, WarmPerHost: 16, PrewarmIdleMS: 120_000,
		PrewarmAtExecutorStart: true}
}

func (a Agents) validate() error {
	switch {
	case a.WarmIdleMS < 0:
		return fmt.Errorf("agents.warm_idle_ms: must not be negative")
	case a.WarmPerUser < 0:
		return fmt.Errorf("agents.warm_per_user: must not be negative")
	case a.WarmMemoryBytes < 0:
		return fmt.Errorf("agents.warm_memory_bytes: must not be negative")
	case a.WarmHostMinAvailableBytes < 0:
		return fmt.Errorf("agents.warm_host_min_available_bytes: must not be negative")
	case a.WarmPerHost < 0:
		return fmt.Errorf("agents.warm_per_host: must not be negative")
	case a.PrewarmIdleMS < 0:
		return fmt.Errorf("agents.prewarm_idle_ms: must not be negative")
	}
	return nil
}
