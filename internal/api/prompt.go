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
	t, ok := s.startTask(w, r)
	if !ok {
		return
	}
	sub := s.Events.Subscribe(t.id, 4096)
	defer sub.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	_ = enc.Encode(promptLine{TaskID: t.id, SessionID: t.sess.ID})
	flush()
	done := make(chan promptLine, 1)
	s.background(func(ctx context.Context) { done <- s.runTask(ctx, t) })
	live := sub.C
	for {
		select {
		case ev, ok := <-live:
			if !ok { // closed when the task ends: the result follows
				live = nil
				continue
			}
			_ = enc.Encode(promptLine{Event: &ev})
			flush()
		case last := <-done:
			drain(sub, enc) // events came before the result; some may still wait here
			_ = enc.Encode(last)
			flush()
			return
		}
	}
}

// promptAsync starts the task and answers at once (202) with its ids; the
// client follows it with GET /v1/tasks/{id}/events.
func (s *Server) promptAsync(w http.ResponseWriter, r *http.Request) {
	t, ok := s.startTask(w, r)
	if !ok {
		return
	}
	s.background(func(ctx context.Context) { s.runTask(ctx, t) })
	writeJSON(w, http.StatusAccepted, map[string]string{"task_id": t.id, "session_id": t.sess.ID, "status": string(store.Queued)})
}

// started is a task that has its token and its row in the store.
type started struct {
	user, id, tok string
	body          PromptBody
	sess          store.Session
}

// startTask reads the prompt, finds or makes the session, issues the
// task's token and stores the task as queued (runTask makes it running).
func (s *Server) startTask(w http.ResponseWriter, r *http.Request) (started, bool) {
	var b PromptBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return started{}, false
	}
	if b.PermissionMode == "" {
		b.PermissionMode = string(broker.ModeDefault)
	}
	t := started{user: r.PathValue("user"), id: newID(), body: b}
	if t.user == "" { // POST /v1/sessions/{id}/prompt: the session says whose
		sess, err := s.Store.GetSession(r.PathValue("id"))
		if err == nil {
			err = s.owned(r, sess.UnixUser)
		}
		if err != nil {
			writeError(w, storeErr(err, "session"))
			return started{}, false
		}
		t.user, t.body.SessionID = sess.UnixUser, sess.ID
	}
	var err error
	if t.sess, err = s.session(t.user, &t.body); err != nil {
		writeError(w, err)
		return started{}, false
	}
	if t.tok, err = s.Broker.StartTask(token.Binding{User: t.user, Session: t.sess.ID, Task: t.id}, broker.Mode(t.body.PermissionMode)); err != nil {
		writeError(w, rpc.InvalidParams("permission_mode", err.Error()))
		return started{}, false
	}
	if _, err := s.Store.CreateTask(store.Task{ID: t.id, SessionID: t.sess.ID, UnixUser: t.user, Prompt: t.body.Prompt, Status: store.Queued}); err != nil {
		s.Broker.EndTask(t.id)
		writeError(w, err)
		return started{}, false
	}
	t.sess.Status = string(store.Running) // the session follows its task
	if sess, err := s.Store.UpdateSession(t.sess); err == nil {
		t.sess = sess
	}
	return t, true
}

// runTask runs the task to its end and records it. A task cut short by
// the daemon stopping stays "running" in the store, which marks it
// interrupted at the next start.
func (s *Server) runTask(ctx context.Context, t started) promptLine {
	if err := s.Store.SetTaskStatus(t.id, store.Running, nil, ""); err != nil {
		s.log().Warn("task status not stored", "task", t.id, "err", err)
	}
	last := s.runPrompt(ctx, t.user, t.id, t.tok, t.body, t.sess)
	last.Missing = s.Broker.EndTask(t.id)
	if ctx.Err() == nil {
		s.finish(t.id, t.sess, last)
	}
	return last
}

// background runs f with the daemon's lifetime (not a request's): a task
// outlives the client that started it. Shutdown cancels and waits.
func (s *Server) background(f func(context.Context)) {
	s.tasks.Add(1)
	go func() {
		defer s.tasks.Done()
		ctx := s.BaseContext
		if ctx == nil {
			ctx = context.Background()
		}
		f(ctx)
	}()
}

// Wait waits until no background task runs (at shutdown, after
// BaseContext has ended; in benchmarks, for the tasks to finish).
func (s *Server) Wait() { s.tasks.Wait() }

func drain(sub *events.Subscription, enc *json.Encoder) {
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return
			}
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
		_, body := errorBody(err)
		return promptLine{Error: body}
	}
	return promptLine{Result: res}
}

// session is the prompt's session: the one it names (the caller's own),
// or a new one.
func (s *Server) session(user string, b *PromptBody) (store.Session, error) {
	if b.SessionID == "" {
		return s.Store.CreateSession(store.Session{ID: newID(), UnixUser: user, AgenticTool: b.Tool, Cwd: b.Cwd,
			Model: b.Model, PermissionMode: b.PermissionMode, Status: "idle"})
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
	s.metrics.taskEnded(string(status))
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
