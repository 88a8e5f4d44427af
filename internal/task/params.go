package task

import (
	"github.com/agor-sh/agor/internal/agent"
	"github.com/agor-sh/agor/internal/rpc"
)

// Params of execute_prompt, named as in the system this replaces.
type Params struct {
	SessionToken   string   `json:"session_token"`
	SessionID      string   `json:"session_id"`
	TaskID         string   `json:"task_id"`
	Tool           string   `json:"agentic_tool"`
	Prompt         string   `json:"prompt"`
	Cwd            string   `json:"cwd"`
	Tools          []string `json:"tools,omitempty"`
	PermissionMode string   `json:"permission_mode"`
	TimeoutMS      int64    `json:"timeout_ms"`
	Model          string   `json:"model,omitempty"`
	// AgentSessionID continues the agent's own session from an earlier
	// turn (the daemon keeps it from that turn's result).
	AgentSessionID string `json:"agent_session_id,omitempty"`
}

// Validate checks the fields, naming the first bad one.
func (p Params) Validate() error {
	switch {
	case p.SessionToken == "":
		return rpc.InvalidParams("session_token", "required")
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.SessionID == "":
		return rpc.InvalidParams("session_id", "required")
	case p.Tool == "":
		return rpc.InvalidParams("agentic_tool", "required")
	case p.Prompt == "":
		return rpc.InvalidParams("prompt", "required")
	case p.TimeoutMS < 0:
		return rpc.InvalidParams("timeout_ms", "must not be negative")
	}
	switch p.PermissionMode {
	case "", "default", "acceptEdits", "bypassPermissions", "plan":
		return nil
	}
	return rpc.InvalidParams("permission_mode", "must be default, acceptEdits, bypassPermissions or plan")
}

// Result of execute_prompt.
type Result struct {
	Status         string       `json:"status"` // completed, failed, cancelled, timeout
	MessageCount   int          `json:"message_count"`
	Usage          agent.Usage  `json:"token_usage"`
	AgentSessionID string       `json:"agent_session_id,omitempty"`
	Error          *agent.Error `json:"error,omitempty"`
}

// StopParams of stop_task.
type StopParams struct {
	SessionToken string `json:"session_token"`
	TaskID       string `json:"task_id"`
	Reason       string `json:"reason,omitempty"`
}

// Validate checks the fields.
func (p StopParams) Validate() error {
	if p.TaskID == "" {
		return rpc.InvalidParams("task_id", "required")
	}
	return nil
}

// StopResult of stop_task.
type StopResult struct {
	Stopped bool `json:"stopped"`
}
