// Package agent runs one turn of an agent CLI (Claude Code, Codex, Gemini,
// opencode) for execute_prompt: each CLI is driven through its own
// long-lived machine protocol by an Adapter, whose output is normalised
// into one event vocabulary and whose permission questions go to the
// daemon. Adding an agent is one file that calls Register.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Request is one prompt for one agent process.
type Request struct {
	SessionID      string
	TaskID         string
	Prompt         string
	Cwd            string // absolute, already resolved beneath the executor's root
	Model          string // "" : the agent's default
	PermissionMode string // default, acceptEdits, bypassPermissions or plan
	// Resume is the agent's own session id from an earlier turn of this
	// session ("" starts a new one); Result.AgentSession returns it.
	Resume string
	// Binary is the CLI to run; Env is its whole environment: clean (no
	// LISTEN_*, NOTIFY_SOCKET, WATCHDOG_*), with HOME, USER, PATH, the
	// tool's configured variables (base URLs, ...) and its API key, which
	// the host fetched just in time and which is in no other process.
	Binary string
	Env    []string
}

// Decision is the daemon's answer to a permission question.
type Decision struct {
	Approved bool
	Reason   string
}

// Host is what an adapter needs of the executor.
type Host interface {
	// Emit reports one normalised event; the host numbers it and sends it
	// to the daemon as report_message, in order.
	Emit(ev Event)
	// Ask sends request_permission to the daemon and waits for the
	// decision; a timeout or a cancelled context is a denial.
	Ask(ctx context.Context, toolName string, toolInput json.RawMessage) Decision
}

// Event types: the one vocabulary every agent's output is normalised to.
const (
	MessageStart      = "message_start"      // {role}
	MessageStop       = "message_stop"       // {role}
	TextDelta         = "text_delta"         // {text}
	ThinkingDelta     = "thinking_delta"     // {text}
	ToolCall          = "tool_call"          // {tool_use_id, tool_name, tool_input}
	ToolResult        = "tool_result"        // {tool_use_id, output, is_error}
	PermissionAsked   = "permission_asked"   // {tool_name, tool_input}
	PermissionDecided = "permission_decided" // {tool_name, approved, reason}
	UsageReport       = "usage"              // Usage fields
	ErrorEvent        = "error"              // {code, message}
)

// Event is one normalised event. Raw keeps the agent's own line (or
// message) for fidelity; it must never hold the API key.
type Event struct {
	Type string          `json:"type"`
	Data map[string]any  `json:"data,omitempty"`
	Raw  json.RawMessage `json:"raw,omitempty"`
}

// Usage is token usage from the agent's own final figures.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Result of one turn, before the host adds timeout and cancellation.
type Result struct {
	Status       string // "completed" or "failed"
	MessageCount int    // assistant messages (text or tool use) in this turn
	Usage        Usage
	AgentSession string // the agent's session id, for the next turn's Resume
	Err          *Error // set when Status is "failed"
}

// Error codes of a failed turn.
const (
	CodeAgentMissing = "agent_missing" // binary not found
	CodeAgentCrashed = "agent_crashed" // exited or broke its protocol
	CodeModelAPI     = "model_api"     // the model API refused or failed
	CodeTimeout      = "timeout"
	// CodeCredentialMissing: the daemon has no API key for the agent.
	CodeCredentialMissing = "credential_missing"
)

// Error says why a turn failed.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Adapter drives one agent CLI. Run starts the process (through Start),
// speaks its protocol, emits events, asks for permissions, and returns
// when the turn ends or ctx does (the process group is then killed by
// Start's cleanup).
type Adapter interface {
	// CredentialKey names the API key the agent needs (ANTHROPIC_API_KEY).
	CredentialKey() string
	Run(ctx context.Context, req Request, host Host) (Result, error)
}

var (
	mu       sync.RWMutex
	adapters = map[string]Adapter{}
)

// Register makes an adapter available under an agentic_tool name.
func Register(name string, a Adapter) {
	mu.Lock()
	defer mu.Unlock()
	adapters[name] = a
}

// Lookup returns the adapter for an agentic_tool name.
func Lookup(name string) (Adapter, error) {
	mu.RLock()
	defer mu.RUnlock()
	if a, ok := adapters[name]; ok {
		return a, nil
	}
	names := make([]string, 0, len(adapters))
	for n := range adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown agentic_tool %q (known: %v)", name, names)
}
