package task

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// host is the agent.Host of one task: events go to the daemon as
// report_message with a gap-free sequence, questions as request_permission.
type host struct {
	conn  *rpc.Conn
	token string
	task  string
	log   *slog.Logger

	mu  sync.Mutex // one sequence, in send order
	seq int64
	// unconfined are the tool calls whose own sandbox could not start
	// (sandboxFailure), for the task's result.
	unconfined []string
}

var _ agent.Host = (*host)(nil)

func (h *host) Emit(ev agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.emitLocked(ev)
	if why := sandboxFailure(ev); why != "" {
		// Never silent: the tool's output said it, and nothing else would.
		msg := "a tool call's sandbox could not start: " + why
		h.unconfined = append(h.unconfined, msg)
		h.log.Warn("tool sandbox failed", "task", h.task, "err", why)
		h.emitLocked(agent.Event{Type: protocol.EventError, Data: map[string]any{"code": protocol.TaskSandbox, "message": msg}})
	}
}

// noteUndone reports what the executor put back in the workspace's .git
// after the turn.
func (h *host) noteUndone(undone []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range undone {
		file, how, _ := strings.Cut(u, " ")
		msg := "undid the confined agent's change to .git/" + file + " (" + how + "): git would have run it outside the sandbox"
		if strings.Contains(u, ": ") { // gitguard.Plants: "PATH: what it would run (disabled: ...)"
			msg = "the confined agent left what would run later outside the sandbox; disabled: " + u
		}
		h.unconfined = append(h.unconfined, msg)
		h.emitLocked(agent.Event{Type: protocol.EventError, Data: map[string]any{"code": protocol.TaskSandbox, "message": msg}})
	}
}

// warnings are what the task's result records besides its status.
func (h *host) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unconfined
}

func (h *host) emitLocked(ev agent.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		h.log.Warn("event not encoded", "task", h.task, "type", ev.Type, "err", err)
		return
	}
	m := protocol.ReportMessage{SessionToken: h.token, TaskID: h.task, Sequence: h.seq, Timestamp: time.Now().UnixMilli(), EventType: ev.Type, EventData: data}
	if err := h.conn.Notify(protocol.MethodReportMessage, m); err != nil {
		h.log.Warn("report_message not sent", "task", h.task, "sequence", h.seq, "err", err)
		return
	}
	h.seq++
}

func (h *host) Ask(ctx context.Context, tool string, input json.RawMessage) agent.Decision {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	p := protocol.RequestPermissionParams{SessionToken: h.token, TaskID: h.task, ToolName: tool, ToolInput: input}
	var d protocol.RequestPermissionResult
	if err := h.conn.Call(ctx, protocol.MethodRequestPermission, p, &d); err != nil {
		return agent.Decision{Approved: false, Reason: fmt.Sprintf("no decision: %v", err)}
	}
	return agent.Decision{Approved: d.Approved, Reason: d.Reason}
}

// apiKey asks the daemon for the agent's key, just in time.
func (h *host) apiKey(ctx context.Context, name string) (string, error) {
	var res protocol.GetAPIKeyResult
	err := h.conn.Call(ctx, protocol.MethodGetAPIKey, protocol.GetAPIKeyParams{SessionToken: h.token, CredentialKey: name}, &res)
	if err != nil {
		return "", fmt.Errorf("get_api_key %s: %w", name, err)
	}
	return res.APIKey, nil
}

// sandboxFailures are what an agent CLI's own sandbox prints when it
// cannot start (bubblewrap without user namespaces, codex's sandbox
// errors): the command then did not run as the agent meant, whatever
// status the turn ends with.
var sandboxFailures = []string{"bwrap: ", "No permissions to create a new namespace", "sandbox error: ", "landlock_sandbox_executable_not_provided"}

// sandboxFailure is the line of a tool result that says its sandbox could
// not start, or "".
func sandboxFailure(ev agent.Event) string {
	if ev.Type != protocol.EventToolResult {
		return ""
	}
	out, _ := ev.Data["output"].(string)
	for _, line := range strings.Split(out, "\n") {
		for _, sig := range sandboxFailures {
			if strings.Contains(line, sig) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}
