package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/agor-sh/agor/internal/broker"
	"github.com/agor-sh/agor/internal/events"
	"github.com/agor-sh/agor/internal/rpc"
	"github.com/agor-sh/agor/internal/store"
	"github.com/agor-sh/agor/internal/token"
)

// PromptBody asks for one agent turn in the user's executor.
type PromptBody struct {
	SessionID      string `json:"session_id"` // "" starts a session
	Tool           string `json:"agentic_tool"`
	Prompt         string `json:"prompt"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	Model          string `json:"model,omitempty"`
	TimeoutMS      int64  `json:"timeout_ms"`
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// promptLine is one line of the prompt's NDJSON reply: first the ids,
// then each event as it happens, then the result.
type promptLine struct {
	TaskID    string          `json:"task_id,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Event     *events.Event   `json:"event,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Missing   []events.Range  `json:"missing_events,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
}

// prompt runs a turn and streams its events (application/x-ndjson).
func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var b PromptBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	if b.PermissionMode == "" {
		b.PermissionMode = string(broker.ModeDefault)
	}
	user, task := r.PathValue("user"), newID()
	sess, err := s.session(user, &b)
	if err != nil {
		writeError(w, err)
		return
	}
	tok, err := s.Broker.StartTask(token.Binding{User: user, Session: sess.ID, Task: task}, broker.Mode(b.PermissionMode))
	if err != nil {
		writeError(w, rpc.InvalidParams("permission_mode", err.Error()))
		return
	}
	if _, err := s.Store.CreateTask(store.Task{ID: task, SessionID: sess.ID, UnixUser: user, Prompt: b.Prompt, Status: store.Running}); err != nil {
		s.Broker.EndTask(task)
		writeError(w, err)
		return
	}
	sub := s.Events.Subscribe(task, 4096)
	defer sub.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	_ = enc.Encode(promptLine{TaskID: task, SessionID: sess.ID})
	flush()
	done := make(chan promptLine, 1)
	// The task outlives this request: a client that goes away can follow it
	// with GET /v1/tasks/{id}/events, and stop it with POST .../stop.
	go func() { done <- s.runPrompt(context.WithoutCancel(r.Context()), user, task, tok, b, sess) }()
	for {
		select {
		case ev := <-sub.C:
			_ = enc.Encode(promptLine{Event: &ev})
			flush()
		case last := <-done:
			drain(sub, enc) // events came before the result; some may still wait here
			last.Missing = s.Broker.EndTask(task)
			s.finish(task, sess, last)
			_ = enc.Encode(last)
			flush()
			return
		}
	}
}

func drain(sub *events.Subscription, enc *json.Encoder) {
	for {
		select {
		case ev := <-sub.C:
			_ = enc.Encode(promptLine{Event: &ev})
		default:
			return
		}
	}
}

func (s *Server) runPrompt(ctx context.Context, user, task, tok string, b PromptBody, sess store.Session) promptLine {
	resume := ""
	if sess.AgenticTool == b.Tool && sess.Cwd == b.Cwd { // agents find their sessions by directory
		resume = sess.AgentSessionID
	}
	params := map[string]any{
		"session_token": tok, "session_id": sess.ID, "task_id": task, "agentic_tool": b.Tool,
		"prompt": b.Prompt, "cwd": b.Cwd, "permission_mode": b.PermissionMode, "model": b.Model,
		"timeout_ms": b.TimeoutMS, "agent_session_id": resume,
	}
	var res json.RawMessage
	if err := s.Pool.Call(ctx, user, "execute_prompt", params, &res); err != nil {
		var e *rpc.Error
		body := &ErrorBody{}
		if !asRPC(err, &e) {
			e = rpc.Errorf(rpc.CodeInternalError, "internal_error", "%v", err)
		}
		body.Error.Code, body.Error.Reason, body.Error.Message = e.Code, e.Reason(), e.Message
		return promptLine{Error: body}
	}
	return promptLine{Result: res}
}

// session is the prompt's session: the one it names (the caller's own),
// or a new one.
func (s *Server) session(user string, b *PromptBody) (store.Session, error) {
	if b.SessionID == "" {
		return s.Store.CreateSession(store.Session{ID: newID(), UnixUser: user, AgenticTool: b.Tool, Cwd: b.Cwd,
			Model: b.Model, PermissionMode: b.PermissionMode, Status: "running"})
	}
	sess, err := s.Store.GetSession(b.SessionID)
	if err != nil || sess.UnixUser != user {
		return store.Session{}, rpc.Errorf(rpc.CodeNotFound, "not_found", "no session %q of %s", b.SessionID, user)
	}
	if b.Tool == "" {
		b.Tool = sess.AgenticTool
	}
	return sess, nil
}

// finish records the task's end, and the session follows it.
func (s *Server) finish(task string, sess store.Session, last promptLine) {
	var r struct {
		Status         string `json:"status"`
		AgentSessionID string `json:"agent_session_id"`
		Error          *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	status, msg := store.Failed, ""
	if last.Error != nil {
		msg = last.Error.Error.Message
	} else if json.Unmarshal(last.Result, &r) == nil {
		if r.Status != "" {
			status = store.TaskStatus(r.Status)
		}
		if r.Error != nil {
			msg = r.Error.Message
		}
	}
	if err := s.Store.SetTaskStatus(task, status, last.Result, msg); err != nil {
		s.log().Warn("task status not stored", "task", task, "err", err)
	}
	sess.Status = string(status)
	if r.AgentSessionID != "" {
		sess.AgentSessionID = r.AgentSessionID
	}
	if _, err := s.Store.UpdateSession(sess); err != nil {
		s.log().Warn("session not updated", "session", sess.ID, "err", err)
	}
}
