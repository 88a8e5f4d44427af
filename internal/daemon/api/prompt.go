package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// prompt runs a turn and streams its events (application/x-ndjson). A
// client that goes away leaves the task to orphaned: stopped after a
// grace period unless someone follows it.
func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	t, ok := s.startTask(w, r)
	if !ok {
		return
	}
	sub := s.Events.Subscribe(t.id, liveBound)
	defer sub.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	_ = enc.Encode(apiwire.PromptLine{TaskID: t.id, SessionID: t.sess.ID})
	flush()
	done := make(chan apiwire.PromptLine, 1)
	s.background(func(ctx context.Context) { done <- s.runTask(ctx, t) })
	live := sub.Ready()
	for {
		select {
		case <-live:
			evs, open := sub.Next()
			for _, ev := range evs {
				_ = enc.Encode(apiwire.PromptLine{Event: &ev})
			}
			flush()
			if !open { // closed when the task ends: the result follows
				live = nil
			}
		case last := <-done:
			drain(sub, enc) // events came before the result; some may still wait here
			if s.stopping() {
				// No result: the task runs on in its executor, the next
				// daemon takes it over, and the client follows it there.
				return
			}
			_ = enc.Encode(last)
			flush()
			return
		case <-r.Context().Done():
			sub.Close()
			if t.body.Interactive == nil { // an interactive one was detached from (interactive.go)
				s.background(func(ctx context.Context) { s.orphaned(ctx, t, done) })
			}
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
	writeJSON(w, http.StatusAccepted, apiwire.PromptAccepted{TaskID: t.id, SessionID: t.sess.ID, Status: string(store.Queued)})
}

// startTask reads the prompt, finds or makes the session, issues the
// task's token and stores the task as queued (runTask makes it running).
func (s *Server) startTask(w http.ResponseWriter, r *http.Request) (started, bool) {
	t, err := s.readPrompt(w, r)
	if err == nil {
		err = s.admit(&t)
	}
	if err != nil {
		writeError(w, err)
		return started{}, false
	}
	t.sess.Status = string(store.Running) // the session follows its task
	if sess, err := s.Store.UpdateSession(t.sess); err == nil {
		t.sess = sess
	}
	return t, true
}

// readPrompt reads the request's prompt and whose it is (a session's
// prompt: the session says), and refuses what no quota allows before
// anything is stored.
func (s *Server) readPrompt(w http.ResponseWriter, r *http.Request) (started, error) {
	var b apiwire.PromptBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.promptBodyLimit())).Decode(&b); err != nil {
		return started{}, s.decodeErr(err)
	}
	if n := int64(len(b.Prompt)); n > s.quotas().MaxPromptBytes {
		return started{}, s.promptTooLarge(n)
	}
	if err := s.checkInteractive(b); err != nil {
		return started{}, err
	}
	if b.PermissionMode == "" {
		b.PermissionMode = string(broker.ModeDefault)
	}
	t := started{subject: subjectOf(r), id: newID(), body: b}
	if t.Person == "" { // POST /v1/sessions/{id}/prompt: the session says whose
		sess, err := s.Store.GetSession(r.PathValue("id"))
		if err == nil {
			err = s.visible(r, sess.UnixUser, sess.UID, audit.Record{Session: sess.ID})
		}
		if err != nil {
			return started{}, storeErr(err, "session")
		}
		t.body.SessionID = sess.ID
		if t.subject, err = s.resolve(r.Context(), s.caller(r), sess.UnixUser); err != nil {
			return started{}, err
		}
	}
	err := s.promptEnv(r.Context(), &t)
	if err == nil {
		t.body.Sandbox, err = s.sandboxLevel(s.Sandbox.PromptLevel(t.body.Sandbox), t.body.Cwd)
	}
	if err == nil {
		err = s.Store.RoomForWork() // reads go on; new work waits for space
	}
	if err == nil {
		err = s.budgetLeft(t.Person) // before any agent starts
	}
	return t, err
}

// admit checks t against its person's quotas, finds or makes its
// session, issues its token and stores it queued, all under quotaMu so
// that the counts hold until the task is stored.
func (s *Server) admit(t *started) error {
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	var err error
	if t.body.SessionID == "" {
		err = s.checkSessionQuota(t.Person, t.UID)
	}
	if err == nil {
		err = s.checkStoredBytes(t.Person, t.UID, int64(len(t.body.Prompt)))
	}
	if err == nil {
		t.sess, err = s.session(t.Person, t.UID, &t.body)
	}
	if err == nil {
		err = s.checkTaskQuota(t.sess.ID)
	}
	if err != nil {
		return err
	}
	bind := token.Binding{User: t.account(), Session: t.sess.ID, Task: t.id, UID: t.UID, Tool: t.body.Tool}
	if bind.User != t.Person {
		bind.Person = t.Person
	}
	if t.tok, err = s.Broker.StartTask(bind, broker.Mode(t.body.PermissionMode), t.body.Sandbox); err != nil {
		return rpc.InvalidParams("permission_mode", err.Error())
	}
	if _, err := s.Store.CreateTask(store.Task{ID: t.id, SessionID: t.sess.ID, UnixUser: t.Person, UID: int64(t.UID), Prompt: t.body.Prompt, Status: store.Queued}); err != nil {
		s.Broker.EndTask(t.id)
		return err
	}
	return nil
}

// runTask runs the task to its end and records it. A task the daemon
// stops before its end stays "running" in the store: the next daemon
// takes it over from its executor (resume.go).
func (s *Server) runTask(ctx context.Context, t started) apiwire.PromptLine {
	if err := s.Store.SetTaskStatus(t.id, store.Running, nil, ""); err != nil {
		s.statusNotStored("task", t.id, err)
	}
	last := s.runPrompt(ctx, t.Executor, t.id, t.tok, t.body, t.sess)
	if ctx.Err() != nil {
		// The daemon is stopping: the task runs on in its executor and
		// the next daemon takes it over. Its open questions are not
		// denied (EndTask would): they are asked again of that daemon.
		return last
	}
	return s.end(t.id, t.sess, last)
}

// end closes the task's broker side and records its end; last gains
// what the store could not keep and the status the daemon recorded.
func (s *Server) end(task string, sess store.Session, last apiwire.PromptLine) apiwire.PromptLine {
	lost := s.Events.Lost(task)
	last.Missing = s.Broker.EndTask(task)
	if lost.Events > 0 { // told before the result: what was shown is not all that was kept
		last.DroppedEvents, last.Warning = lost.Events, s.lostWarning(lost)
	}
	last.Status = s.finish(task, sess, last)
	return last
}

// lostWarning says why a task's events were not all stored: for a full
// store, which directory wants space.
func (s *Server) lostWarning(lost events.Lost) string {
	if errors.Is(lost.Err, store.ErrFull) {
		return fmt.Sprintf("%d of the agent's events were not stored: the daemon's state directory %s is full (storage_full); the task is recorded incomplete",
			lost.Events, s.Store.Space().Dir)
	}
	return fmt.Sprintf("%d of the agent's events were not stored: %v", lost.Events, lost.Err)
}

// statusNotStored logs a status the store could not write. A full store
// keeps it in memory and has said so once for the episode: that is no
// warning per task.
func (s *Server) statusNotStored(what, id string, err error) {
	if errors.Is(err, store.ErrFull) {
		s.log().Info(what+" status kept in memory until the store can write", what, id)
		return
	}
	s.log().Warn(what+" status not stored", what, id, "err", err)
}

// stopping says whether the daemon is stopping (BaseContext ended).
func (s *Server) stopping() bool {
	return s.BaseContext != nil && s.BaseContext.Err() != nil
}

// Wait waits until no background task runs (at shutdown, after
// BaseContext has ended; in benchmarks, for the tasks to finish).
func (s *Server) Wait() { s.tasks.Wait() }

func drain(sub *events.Subscription, enc *json.Encoder) {
	evs, _ := sub.Next()
	for _, ev := range evs {
		_ = enc.Encode(apiwire.PromptLine{Event: &ev})
	}
}

func (s *Server) runPrompt(ctx context.Context, executor, task, tok string, b apiwire.PromptBody, sess store.Session) apiwire.PromptLine {
	resume := ""
	if sess.AgenticTool == b.Tool && sess.Cwd == b.Cwd { // agents find their sessions by directory
		resume = sess.AgentSessionID
	}
	params := protocol.ExecutePromptParams{
		SessionToken: tok, SessionID: sess.ID, TaskID: task, Tool: b.Tool, Prompt: b.Prompt, Cwd: b.Cwd,
		PermissionMode: b.PermissionMode, Model: b.Model, TimeoutMS: b.TimeoutMS, AgentSessionID: resume,
		Sandbox: b.Sandbox, Interactive: b.Interactive,
	}
	var res json.RawMessage
	var err error
	if b.Interactive != nil {
		err = s.interactiveExecutor(ctx, executor, task)
	}
	if err == nil {
		params.GatewayToken, err = s.gatewayToken(ctx, executor, task, b.Tool, sess)
	}
	if err == nil {
		err = s.Pool.Call(ctx, executor, protocol.MethodExecutePrompt, params, &res)
	}
	if err != nil {
		_, body := errorBody(err)
		return apiwire.PromptLine{Error: body}
	}
	return apiwire.PromptLine{Result: res}
}

// finish records the task's end, and the session follows it. A task whose
// events were not all stored ends incomplete whatever the agent said;
// that status is returned ("" when it is the agent's).
func (s *Server) finish(task string, sess store.Session, last apiwire.PromptLine) string {
	var r protocol.ExecutePromptResult
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
	s.sandboxApplied(audit.Record{User: sess.UnixUser, Session: sess.ID, Task: task}, r.Sandbox)
	changed := ""
	if last.DroppedEvents > 0 {
		status, changed = store.Incomplete, string(store.Incomplete)
		msg = last.Warning
	}
	s.metrics.taskEnded(string(status))
	f := store.Finish{Status: status, Result: last.Result, Error: msg, Dropped: last.DroppedEvents}
	if err := s.Store.FinishTask(task, f); err != nil {
		s.statusNotStored("task", task, err)
	}
	sess.Status = string(status)
	if r.AgentSessionID != "" {
		sess.AgentSessionID = r.AgentSessionID
	}
	if _, err := s.Store.UpdateSession(sess); err != nil {
		s.statusNotStored("session", sess.ID, err)
	}
	return changed
}

// promptEnv routes a prompt (routeEnv).
func (s *Server) promptEnv(ctx context.Context, t *started) error {
	sub, err := s.routeEnv(ctx, t.subject, &t.body)
	if err == nil {
		t.subject = sub
	}
	return err
}
