package task

import (
	"context"
	"encoding/json"
	"errors"
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
// The daemon's connection may change under a running task (resume_task
// after the daemon restarted): events are kept (keep) to be sent again,
// and a question whose connection went is asked again on the next.
type host struct {
	task string
	log  *slog.Logger

	mu       sync.Mutex // one sequence, in send order; the connection
	seq      int64
	conn     *rpc.Conn // the daemon's now (it may have gone)
	token    string    // the task's token on conn
	attached chan struct{}
	kept     keptEvents
	// unconfined are the tool calls whose own sandbox could not start
	// (sandboxFailure), for the task's result.
	unconfined []string
	// undone is what the guard put back or disabled after the turn
	// (gitguard), for the result's sandbox, which the daemon audits.
	undone []string
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
	h.undone = append(h.undone, undone...)
	for _, u := range undone {
		file, how, _ := strings.Cut(u, " ")
		msg := "undid the confined agent's change to .git/" + file + " (" + how + "): git would have run it outside the sandbox"
		if strings.Contains(u, ": ") { // gitguard's sweep: "PATH: why (disabled: ...)"
			msg = "the confined agent left what would run later outside the sandbox; disabled: " + u
		}
		h.unconfined = append(h.unconfined, msg)
		h.emitLocked(agent.Event{Type: protocol.EventError, Data: map[string]any{"code": protocol.TaskSandbox, "message": msg}})
	}
}

// sandbox is the result's sandbox: box (nil for none), with what the
// guard undid (a copy: a warm agent's box serves every turn).
func (h *host) sandbox(box *protocol.SandboxInfo) *protocol.SandboxInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if box == nil || len(h.undone) == 0 {
		return box
	}
	out := *box
	out.Undone = append([]string(nil), h.undone...)
	return &out
}

// warnings are what the task's result records besides its status.
func (h *host) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unconfined
}

func newHost(task string, conn *rpc.Conn, token string, log *slog.Logger) *host {
	return &host{task: task, log: log, conn: conn, token: token, attached: make(chan struct{})}
}

// emitLocked numbers ev, keeps it and sends it while a daemon is
// connected: one that went keeps it for resume_task.
func (h *host) emitLocked(ev agent.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		h.log.Warn("event not encoded", "task", h.task, "type", ev.Type, "err", err)
		return
	}
	m := protocol.ReportMessage{TaskID: h.task, Sequence: h.seq, Timestamp: time.Now().UnixMilli(), EventType: ev.Type, EventData: data}
	h.seq++
	h.kept.add(m)
	h.sendLocked(m)
}

func (h *host) sendLocked(m protocol.ReportMessage) {
	if gone(h.conn) {
		return
	}
	m.SessionToken = h.token
	if err := h.conn.Notify(protocol.MethodReportMessage, m); err != nil {
		h.log.Info("report_message kept for the daemon's return", "task", h.task, "sequence", m.Sequence, "err", err)
	}
}

// attach makes conn the daemon's connection for the task from now on:
// first the kept events past after go out on it, in order, then new ones.
func (h *host) attach(conn *rpc.Conn, token string, after int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn, h.token = conn, token
	missed := h.kept.after(after)
	if len(missed) > 0 && missed[0].Sequence > after+1 {
		h.log.Warn("events of a task no longer kept for the daemon", "task", h.task, "missing_from", after+1, "missing_to", missed[0].Sequence-1)
	}
	for _, m := range missed {
		h.sendLocked(m)
	}
	close(h.attached) // a question waiting for a daemon asks again
	h.attached = make(chan struct{})
}

// produced is how many events the task numbered (its last sequence + 1).
func (h *host) produced() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// current is the daemon's connection, the task's token on it, and what
// is closed when another is attached.
func (h *host) current() (*rpc.Conn, string, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn, h.token, h.attached
}

func gone(c *rpc.Conn) bool {
	if c == nil {
		return true
	}
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// leavingWait bounds the wait for a connection to close after a call on
// it was cancelled: a stopping daemon cancels its handlers first.
const leavingWait = 5 * time.Second

// daemonLeaving says whether a call failed because the daemon went (or
// is going): its connection closes, so the question is asked again of
// the next one, never answered by the daemon's absence.
func daemonLeaving(conn *rpc.Conn, err error) bool {
	if gone(conn) {
		return true
	}
	if !errors.Is(err, rpc.ErrClosed) && !rpc.IsCode(err, rpc.CodeRequestCancelled) {
		return false
	}
	select {
	case <-conn.Done():
		return true
	case <-time.After(leavingWait):
		return false
	}
}

// Ask asks the daemon, and again on its next connection when the one it
// was asked on goes first: a question is never answered by a daemon's
// absence, only by a person, the daemon's timeout or the task's end.
func (h *host) Ask(ctx context.Context, tool string, input json.RawMessage) agent.Decision {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var d protocol.RequestPermissionResult
	err := h.call(ctx, protocol.MethodRequestPermission, func(tok string) any {
		return protocol.RequestPermissionParams{SessionToken: tok, TaskID: h.task, ToolName: tool, ToolInput: input}
	}, &d)
	if err != nil {
		return agent.Decision{Approved: false, Reason: fmt.Sprintf("no decision: %v", err)}
	}
	return agent.Decision{Approved: d.Approved, Reason: d.Reason}
}

// apiKey asks the daemon for the agent's key, just in time.
func (h *host) apiKey(ctx context.Context, name string) (string, error) {
	var res protocol.GetAPIKeyResult
	err := h.call(ctx, protocol.MethodGetAPIKey, func(tok string) any {
		return protocol.GetAPIKeyParams{SessionToken: tok, CredentialKey: name}
	}, &res)
	if err != nil {
		return "", fmt.Errorf("get_api_key %s: %w", name, err)
	}
	return res.APIKey, nil
}

// call calls the daemon with the params made for the task's token on its
// connection now; a daemon that goes while it is asked is asked again
// when the next one takes the task over (resume_task).
func (h *host) call(ctx context.Context, method string, params func(tok string) any, result any) error {
	for {
		conn, tok, next := h.current()
		if !gone(conn) {
			err := conn.Call(ctx, method, params(tok), result)
			if err == nil || ctx.Err() != nil || !daemonLeaving(conn, err) {
				return err
			}
			h.log.Info(method+" waits for the daemon's return", "task", h.task)
		}
		select {
		case <-next:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
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
