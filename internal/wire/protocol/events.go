package protocol

import (
	"encoding/json"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Event types: the one vocabulary every agent's output is normalised to.
// The comment says what Event.Data holds.
const (
	EventMessageStart      = "message_start"      // {role}
	EventMessageStop       = "message_stop"       // {role}
	EventTextDelta         = "text_delta"         // {text}
	EventThinkingDelta     = "thinking_delta"     // {text}
	EventToolCall          = "tool_call"          // {tool_use_id, tool_name, tool_input}
	EventToolResult        = "tool_result"        // {tool_use_id, output, is_error}
	EventPermissionAsked   = "permission_asked"   // {tool_name, tool_input}
	EventPermissionDecided = "permission_decided" // {tool_name, approved, reason}
	EventUsage             = "usage"              // TokenUsage's fields
	EventError             = "error"              // {code, message}
	EventSandbox           = "sandbox"            // SandboxInfo's fields: what confinement the agent got
)

// EventTypes lists the vocabulary, in the order above.
var EventTypes = []string{
	EventMessageStart, EventMessageStop, EventTextDelta, EventThinkingDelta,
	EventToolCall, EventToolResult, EventPermissionAsked, EventPermissionDecided,
	EventUsage, EventError, EventSandbox, EventNotice, EventTerminal,
}

// KnownEventType reports whether t is in the vocabulary.
func KnownEventType(t string) bool {
	for _, k := range EventTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Event is one normalised event: report_message's event_data. Raw keeps
// the agent's own line (or message) for fidelity; it never holds the API
// key.
type Event struct {
	Type string          `json:"type"`
	Data map[string]any  `json:"data,omitempty"`
	Raw  json.RawMessage `json:"raw,omitempty"`
}

// ReportMessage is the report_message notification: one event of a task.
// Sequence starts at 0 per task and has no gaps, so the daemon stores each
// event exactly once and can tell a lost one. EventData is an Event as
// JSON; the daemon stores it as it came.
type ReportMessage struct {
	SessionToken string          `json:"session_token"`
	TaskID       string          `json:"task_id"`
	Sequence     int64           `json:"sequence"`
	Timestamp    int64           `json:"timestamp"` // Unix milliseconds
	EventType    string          `json:"event_type"`
	EventData    json.RawMessage `json:"event_data"`
}

// Validate checks the fields.
func (p ReportMessage) Validate() error {
	switch {
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.Sequence < 0:
		return rpc.InvalidParams("sequence", "must not be negative")
	case !KnownEventType(p.EventType):
		// It becomes an SSE event name in clients' streams: a value from
		// outside the vocabulary could forge frames there.
		return rpc.InvalidParams("event_type", "not in the event vocabulary")
	}
	return nil
}

// GetAPIKeyParams asks for the key an agent needs, just in time.
type GetAPIKeyParams struct {
	SessionToken  string `json:"session_token"`
	CredentialKey string `json:"credential_key"` // e.g. ANTHROPIC_API_KEY
}

// Validate checks the fields.
func (p GetAPIKeyParams) Validate() error {
	if p.SessionToken == "" {
		return rpc.InvalidParams("session_token", "required")
	}
	if p.CredentialKey == "" {
		return rpc.InvalidParams("credential_key", "required")
	}
	return nil
}

// GetAPIKeyResult carries the key.
type GetAPIKeyResult struct {
	APIKey string `json:"api_key"`
}

// RequestPermissionParams asks whether an agent may use a tool.
type RequestPermissionParams struct {
	SessionToken string          `json:"session_token"`
	TaskID       string          `json:"task_id"`
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
}

// Validate checks the fields.
func (p RequestPermissionParams) Validate() error {
	switch {
	case p.SessionToken == "":
		return rpc.InvalidParams("session_token", "required")
	case p.TaskID == "":
		return rpc.InvalidParams("task_id", "required")
	case p.ToolName == "":
		return rpc.InvalidParams("tool_name", "required")
	}
	return nil
}

// Permission scopes: how far an approval reaches.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
)

// RequestPermissionResult is the decision.
type RequestPermissionResult struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
	Scope    string `json:"scope,omitempty"`
}
