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

	"github.com/agor-sh/agor/internal/wire/protocol"
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
	// Wrap, when set, is how the CLI's argv is run: through the sandbox
	// launcher, which confines it and everything it starts.
	Wrap func(argv []string) []string
	// Started, when set, is told the process's pid as soon as it runs
	// (the gateway relay's door lets in what descends from it).
	Started func(pid int)
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

// Event is one normalised event, as report_message carries it; the event
// types are protocol's Event* constants.
type Event = protocol.Event

// Usage is token usage from the agent's own final figures.
type Usage = protocol.TokenUsage

// Result of one turn, before the host adds timeout and cancellation.
type Result struct {
	Status       string // "completed" or "failed"
	MessageCount int    // assistant messages (text or tool use) in this turn
	Usage        Usage
	AgentSession string // the agent's session id, for the next turn's Resume
	Err          *Error // set when Status is "failed"
}

// Error says why a turn failed; its codes are protocol's Task* constants.
type Error = protocol.TaskError

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

// resumeFailed is the error of a turn whose agent said it could not
// continue its session id (the record is gone, or is not where this run
// of the CLI looks): the turn fails saying so, before anything reaches
// the model, and never goes on in a new conversation nobody asked for.
func resumeFailed(id, why string) *Error {
	return &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("could not continue agent session %s: %s", id, why)}
}

// planRefuses answers what an agent asks to do in plan mode, the same for
// every agent: plan changes nothing, so each command, edit or fetch it
// asks for is refused without asking anyone. What runs without asking is
// what each CLI holds to change nothing: reads, and Codex's known-safe
// commands.
func planRefuses(mode string) (Decision, bool) {
	if mode == "plan" {
		return Decision{Approved: false, Reason: "plan mode changes nothing"}, true
	}
	return Decision{}, false
}
