package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// MethodPrewarmAgent (daemon → executor, revision 3) starts an agent
// process for a session's first prompt before the prompt is written: the
// CLI's start and handshake, which are most of a cold turn, are then
// paid while the person types. The agent is a warm agent of the session
// that has not run a turn yet; a prompt uses it only when every option
// matches what it was started with.
const MethodPrewarmAgent = "prewarm_agent"

// RevisionPrewarm is the first revision whose executor serves
// prewarm_agent and reports ExecutePromptResult.Prewarmed.
const RevisionPrewarm = 3

// Reasons a prewarm_agent did not start an agent (PrewarmAgentResult.Reason).
const (
	PrewarmAlreadyWarm = "already_warm" // the session has a warm agent of the tool
	PrewarmRunning     = "running"      // a task of the session and tool runs
	PrewarmNoRoom      = "no_room"      // only by evicting a used warm agent
	PrewarmNoMemory    = "no_memory"    // the executor's cgroup is near its memory limit
	PrewarmOff         = "off"          // warm agents are off, or no gateway
	PrewarmFailed      = "failed"       // the agent could not be started
)

// PrewarmAgentParams are the options of the prompt expected next, as
// execute_prompt will carry them. Gateway is required (GatewayToken from
// daemons before revision 4, whose value is unused): a pre-warmed agent
// is pointed at the gateway's relay with GatewayPlaceholder, which
// serves nothing until a task runs on it; it is never given the raw key.
type PrewarmAgentParams struct {
	SessionID      string `json:"session_id"`
	Tool           string `json:"agentic_tool"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	Model          string `json:"model,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	AgentSessionID string `json:"agent_session_id,omitempty"`
	Gateway        bool   `json:"gateway,omitempty"`
	GatewayToken   string `json:"gateway_token,omitempty"`
}

// Validate checks the fields, naming the first bad one.
func (p PrewarmAgentParams) Validate() error {
	switch {
	case p.SessionID == "":
		return rpc.InvalidParams("session_id", "required")
	case p.Tool == "":
		return rpc.InvalidParams("agentic_tool", "required")
	case !p.Gateway && p.GatewayToken == "":
		return rpc.InvalidParams("gateway", "required")
	}
	if err := ValidSandbox(p.Sandbox); err != nil {
		return err
	}
	return ValidPermissionMode(p.PermissionMode)
}

// Prompt is the execute_prompt these options stand for, without its
// task or credential: what the executor resolves the agent's settings
// from (behind the gateway, as Validate requires).
func (p PrewarmAgentParams) Prompt() ExecutePromptParams {
	return ExecutePromptParams{SessionID: p.SessionID, Tool: p.Tool, Cwd: p.Cwd, PermissionMode: p.PermissionMode,
		Model: p.Model, Sandbox: p.Sandbox, AgentSessionID: p.AgentSessionID}
}

// PrewarmAgentResult says whether an agent was started (Reason: why not).
type PrewarmAgentResult struct {
	Started bool   `json:"started"`
	Reason  string `json:"reason,omitempty"`
}
