package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// Agentic tools: the agent CLIs execute_prompt can drive.
const (
	ToolClaudeCode = "claude-code"
	ToolCodex      = "codex"
	ToolGemini     = "gemini"
	ToolOpenCode   = "opencode"
)

// Permission modes, as Claude Code names them; the other agents map them.
const (
	ModeDefault           = "default"
	ModeAcceptEdits       = "acceptEdits"
	ModeBypassPermissions = "bypassPermissions"
	ModePlan              = "plan"
)

// ExecutePromptParams runs one prompt of a session as one task. The
// session token is the task's: the executor presents it on every call
// back (get_api_key, request_permission, report_message), which is where
// the daemon checks it.
type ExecutePromptParams struct {
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
	// Sandbox confines the agent and what it runs (SandboxOff...).
	Sandbox string `json:"sandbox,omitempty"`
	// GatewayToken, when set, is the task's credential at the daemon's
	// model gateway: the executor points the agent at its loopback relay
	// instead of the provider, with GatewayPlaceholder for a key, and asks
	// for no key (revision 2). Since revision 4 the agent never sees it:
	// the relay puts it on the connections of this task's processes only,
	// for as long as the task runs (RevisionDoor).
	GatewayToken string `json:"gateway_token,omitempty"`
	// Interactive runs the agent's terminal UI instead of a headless
	// turn (RevisionInteractive); Prompt may then be empty.
	Interactive *Interactive `json:"interactive,omitempty"`
}

// GatewayPlaceholder is the key an agent behind the gateway holds: the
// same for every agent, it names no task and opens nothing (the relay
// decides by whose process holds the connection).
const GatewayPlaceholder = "agor-gateway"

// Validate checks the fields, naming the first bad one.
func (p ExecutePromptParams) Validate() error {
	switch {
	case p.SessionToken == "":
		return rpc.InvalidParams("session_token", "required")
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.SessionID == "":
		return rpc.InvalidParams("session_id", "required")
	case p.Tool == "":
		return rpc.InvalidParams("agentic_tool", "required")
	case p.Prompt == "" && p.Interactive == nil:
		return rpc.InvalidParams("prompt", "required")
	case p.TimeoutMS < 0:
		return rpc.InvalidParams("timeout_ms", "must not be negative")
	}
	if err := ValidSandbox(p.Sandbox); err != nil {
		return err
	}
	if err := p.Interactive.Validate(); err != nil {
		return err
	}
	return ValidPermissionMode(p.PermissionMode)
}

// ValidPermissionMode accepts "" (the default) and the four modes.
func ValidPermissionMode(mode string) error {
	switch mode {
	case "", ModeDefault, ModeAcceptEdits, ModeBypassPermissions, ModePlan:
		return nil
	}
	return rpc.InvalidParams("permission_mode", "must be default, acceptEdits, bypassPermissions or plan")
}

// Task statuses in execute_prompt's result.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimeout   = "timeout"
)

// ExecutePromptResult is how the task ended.
type ExecutePromptResult struct {
	Status         string       `json:"status"`
	MessageCount   int          `json:"message_count"`
	Usage          TokenUsage   `json:"token_usage"`
	AgentSessionID string       `json:"agent_session_id,omitempty"`
	Error          *TaskError   `json:"error,omitempty"`
	Sandbox        *SandboxInfo `json:"sandbox,omitempty"`
	// Warm says the turn ran on the session's agent process kept from
	// its previous turn, rather than a new process resuming the session.
	Warm bool `json:"warm,omitempty"`
	// Prewarmed says the turn was the first on an agent process started
	// ahead of the prompt (prewarm_agent, revision 3); Warm is then false.
	Prewarmed bool `json:"prewarmed,omitempty"`
	// Warnings are what went wrong in a turn that still ended: a tool
	// call whose own sandbox could not start, so its command did not run
	// as the agent meant (each also an "error" event, code "sandbox").
	Warnings []string `json:"warnings,omitempty"`
}

// TokenUsage is token usage from the agent's own final figures.
type TokenUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Codes of a failed task (TaskError.Code).
const (
	TaskAgentMissing      = "agent_missing"      // binary not found
	TaskAgentCrashed      = "agent_crashed"      // exited or broke its protocol
	TaskModelAPI          = "model_api"          // the model API refused or failed
	TaskTimeout           = "timeout"            // timeout_ms passed
	TaskCancelled         = "cancelled"          // stop_task, or the agent cancelled the turn
	TaskCredentialMissing = "credential_missing" // the daemon has no API key for the agent
	TaskSandbox           = "sandbox"            // the sandbox level was refused, or the kernel cannot give it
)

// TaskError says why a task failed.
type TaskError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *TaskError) Error() string { return e.Code + ": " + e.Message }

// StopTaskParams stops a running task. It carries no session token: the
// executor serves only the daemon (SO_PEERCRED), and a token the daemon
// hands itself would prove nothing; tokens bind the executor's calls back.
type StopTaskParams struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
}

// Validate checks the fields.
func (p StopTaskParams) Validate() error {
	if p.TaskID == "" {
		return rpc.InvalidParams("task_id", "required")
	}
	return nil
}

// StopTaskResult says whether a running task was stopped.
type StopTaskResult struct {
	Stopped bool `json:"stopped"`
}

// ResumeTaskParams takes over a task the executor runs, on the calling
// connection, for a daemon that lost the one execute_prompt came on (it
// restarted, or was killed). The executor sends again every event it
// keeps with a sequence above AfterSequence (-1: all), in order, before
// any new one; later events and permission questions come on this
// connection, under SessionToken, the daemon's new token for the task.
// The result is execute_prompt's, when the task ends (at once for a task
// that ended while no daemon was connected).
type ResumeTaskParams struct {
	TaskID        string `json:"task_id"`
	SessionToken  string `json:"session_token"`
	AfterSequence int64  `json:"after_sequence"`
}

// Validate checks the fields.
func (p ResumeTaskParams) Validate() error {
	switch {
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.SessionToken == "":
		return rpc.InvalidParams("session_token", "required")
	case p.AfterSequence < -1:
		return rpc.InvalidParams("after_sequence", "at least -1")
	}
	return nil
}
