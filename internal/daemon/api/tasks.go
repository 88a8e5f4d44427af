package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/randid"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func sessionView(s store.Session) apiwire.SessionView {
	return apiwire.SessionView{ID: s.ID, UnixUser: s.UnixUser, AgenticTool: s.AgenticTool, Cwd: s.Cwd, Model: s.Model,
		PermissionMode: s.PermissionMode, Status: s.Status, Environment: s.Environment, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func taskView(t store.Task) apiwire.TaskView {
	v := apiwire.TaskView{ID: t.ID, SessionID: t.SessionID, UnixUser: t.UnixUser, Prompt: t.Prompt, Status: string(t.Status), Result: t.Result, Error: t.Error, CreatedAt: t.CreatedAt,
		DroppedEvents: t.Dropped}
	if !t.EndedAt.IsZero() {
		v.EndedAt = &t.EndedAt
	}
	return v
}

// page reads ?limit= (default 100, at most 1000) and ?after=.
func page(r *http.Request) (int, string, error) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, "", rpc.InvalidParams("limit", "must be 1..1000")
		}
		limit = n
	}
	return limit, r.URL.Query().Get("after"), nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	c := s.caller(r)
	limit, after, err := page(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var list []store.Session
	if c.anyone() {
		list, err = s.Store.ListSessions(r.URL.Query().Get("user"), limit, after)
	} else { // their own name's, made while the name was theirs
		list, err = s.Store.ListSessionsOf(c.user.Name, c.user.UID, limit, after)
		s.hiddenSessions(c.user.Name, c.user.UID)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]apiwire.SessionView, 0, len(list))
	for _, x := range list {
		out = append(out, sessionView(x))
	}
	writeJSON(w, http.StatusOK, apiwire.SessionList{Sessions: out})
}

// hiddenSessions audits, once a window, that name's list left out
// sessions of earlier accounts of the name.
func (s *Server) hiddenSessions(name string, uid uint32) {
	others, err := s.Store.OtherUIDs(name, uid)
	if err != nil || s.Audit == nil {
		return
	}
	for _, o := range others {
		s.Audit.Aggregate(audit.Record{Action: audit.AccountMismatch, User: name, UID: audit.UIDOf(uid), StoredUID: audit.StoredUID(o), Reason: "sessions of another account of this name left out"})
	}
}

// createSession makes a session: {unix_user, agentic_tool, cwd, model,
// permission_mode}; unix_user defaults to the caller, and only an admin
// may name another.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var b struct {
		UnixUser string `json:"unix_user"`
		apiwire.PromptBody
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	c := s.caller(r)
	if b.UnixUser == "" {
		b.UnixUser = c.user.Name
	}
	if !c.actsFor(b.UnixUser) {
		writeError(w, errNotYourself())
		return
	}
	if b.Tool == "" {
		writeError(w, rpc.InvalidParams("agentic_tool", "required"))
		return
	}
	t, err := s.resolve(r.Context(), c, b.UnixUser)
	if err == nil {
		t, err = s.withEnv(r.Context(), t, b.Environment)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	uid := t.UID
	b.Environment = t.Env
	b.SessionID = ""
	s.quotaMu.Lock()
	err = s.Store.RoomForWork()
	if err == nil {
		err = s.checkSessionQuota(b.UnixUser, uid)
	}
	var sess store.Session
	if err == nil {
		sess, err = s.session(b.UnixUser, uid, &b.PromptBody)
	}
	s.quotaMu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	// A session made without a prompt: one is coming. Its agent starts
	// now, with the session's options.
	b.SessionID = sess.ID
	s.prewarmLater(t, b.PromptBody)
	writeJSON(w, http.StatusCreated, sessionView(sess))
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	sess, err := s.Store.GetSession(r.PathValue("id"))
	if err == nil {
		err = s.visible(r, sess.UnixUser, sess.UID, audit.Record{Session: sess.ID})
	}
	if err != nil {
		writeError(w, storeErr(err, "session"))
		return
	}
	limit, after, err := page(r)
	if err != nil {
		writeError(w, err)
		return
	}
	list, err := s.Store.ListTasks(sess.ID, limit, after)
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]apiwire.TaskView, 0, len(list))
	for _, t := range list {
		out = append(out, taskView(t))
	}
	writeJSON(w, http.StatusOK, apiwire.TaskList{Tasks: out})
}

// visibleTask is the task {id} when the caller may see it; otherwise it
// writes the error and returns false.
func (s *Server) visibleTask(w http.ResponseWriter, r *http.Request) (store.Task, bool) {
	t, err := s.Store.GetTask(r.PathValue("id"))
	if err == nil {
		err = s.visible(r, t.UnixUser, t.UID, taskRef(t))
	}
	if err != nil {
		writeError(w, storeErr(err, "task"))
		return store.Task{}, false
	}
	return t, true
}

// taskRef names t in an audit record.
func taskRef(t store.Task) audit.Record { return audit.Record{Session: t.SessionID, Task: t.ID} }

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.visibleTask(w, r); ok {
		writeJSON(w, http.StatusOK, taskView(t))
	}
}

// stopTask asks the task's executor to stop it (stop_task).
func (s *Server) stopTask(w http.ResponseWriter, r *http.Request) {
	t, ok := s.visibleTask(w, r)
	if !ok {
		return
	}
	if t.Status.Final() {
		writeJSON(w, http.StatusOK, apiwire.StopReply{Stopped: false, Status: string(t.Status)})
		return
	}
	if err := s.current(r.Context(), t.UnixUser, t.UID, taskRef(t)); err != nil {
		writeError(w, err)
		return
	}
	var res protocol.StopTaskResult
	p := protocol.StopTaskParams{TaskID: t.ID, Reason: "stopped through the API"}
	if err := s.Pool.Call(r.Context(), s.taskExecutor(t.UnixUser, t.SessionID), protocol.MethodStopTask, p, &res); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiwire.StopReply{Stopped: res.Stopped})
}

// taskEvents streams a task's events as Server-Sent Events: those stored
// after ?after= (or Last-Event-ID), then, with ?follow=1, new ones live until
// the task ends. The id of each is its sequence, so a client that
// reconnects with Last-Event-ID gets every event exactly once.
func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request) {
	t, ok := s.visibleTask(w, r)
	if !ok {
		return
	}
	id := t.ID
	after, err := resumeFrom(r)
	if err != nil {
		writeError(w, err)
		return
	}
	follow := r.URL.Query().Get("follow") == "1"
	// A replay holds a page of events while it is written, so it counts
	// toward the person's streams as a follow does.
	release, err := s.eventStream(s.caller(r).user.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	var sub *events.Subscription
	if follow {
		sub = s.Events.Subscribe(id, liveBound) // before the replay, so nothing falls between
		defer sub.Close()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	w.WriteHeader(http.StatusOK)
	_ = sse.rc.Flush() // the client knows at once that its stream is open
	person := s.caller(r).user.Name
	after, err = s.replay(sse, id, after, func() (func(), error) { return s.heavy.take(r.Context(), person) })
	if err != nil || !follow {
		return
	}
	s.follow(r, sse, sub, id, after)
}

func resumeFrom(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("after")
	if v == "" {
		v = r.Header.Get("Last-Event-ID")
	}
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 {
		return 0, rpc.InvalidParams("after", "must be a sequence number")
	}
	return n, nil
}

// Replays read the store a page at a time: at most replayPage events and,
// past replayPageBytes, no more (one event at least), so that a stream
// holds about a megabyte however large the task's events are.
const (
	replayPage      = 500
	replayPageBytes = 1 << 20
)

// noTurn is replay's take for a follower's catching up, which waits for
// no turn.
func noTurn() (func(), error) { return func() {}, nil }

// replay sends the stored events after after; it returns the last sent.
// Each page is read and encoded in a turn (take's: the person's
// output-heavy slots, or noTurn) and written after it, so that a stream
// whose client does not read holds its page, never a turn: one that held
// it while blocked on a full socket kept the person's next replay waiting
// for good (a client reading its streams one after another hung).
func (s *Server) replay(sse *sseWriter, task string, after int64, take func() (func(), error)) (int64, error) {
	var buf []byte
	for {
		release, err := take()
		if err != nil {
			return after, err
		}
		evs, err := s.Store.EventPage(task, after, replayPage, replayPageBytes)
		buf = buf[:0]
		for _, ev := range evs {
			buf = appendEvent(buf, ev)
		}
		release()
		if err != nil || len(evs) == 0 {
			return after, err
		}
		last := evs[len(evs)-1].Sequence
		if err := sse.write(buf); err != nil {
			return after, err
		}
		after = last
	}
}

// Follower polling of the store for the task's end: the sink's close of
// the live feed says when a task ends, so while it is open the store is
// only asked now and then (a follower that subscribed after the end was
// announced); once closed, often, until the final status is written.
const (
	followPollOpen    = 2 * time.Second
	followPollClosing = 100 * time.Millisecond
)

// follow sends live events until the task has ended and all are sent.
func (s *Server) follow(r *http.Request, sse *sseWriter, sub *events.Subscription, task string, after int64) {
	ended := func() bool { // the store says the task is over: send the rest and the end
		t, err := s.Store.GetTask(task)
		if err == nil && !t.Status.Final() {
			return false
		}
		_, _ = s.replay(sse, task, after, noTurn)
		_ = sse.send("end", "", string(t.Status))
		return true
	}
	if ended() {
		return
	}
	tick := time.NewTicker(followPollOpen)
	defer tick.Stop()
	defer func() { sub.Close() }() // the last one, when resubscribed
	live := sub.Ready()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-live:
			evs, open := sub.Next()
			for _, ev := range evs {
				if ev.Sequence > after {
					if sse.event(ev) != nil {
						return
					}
					after = ev.Sequence
				}
			}
			if open {
				continue
			}
			if sub.Lagged() { // fell behind a running task: follow anew, catch up from the store
				sub = s.Events.Subscribe(task, liveBound)
				live = sub.Ready()
			} else { // the task ended: its status follows soon
				live = nil
				tick.Reset(followPollClosing)
			}
			after, _ = s.replay(sse, task, after, noTurn)
		case <-tick.C:
			if ended() {
				return
			}
		}
	}
}

// started is a task that has its token and its row in the store.
type started struct {
	subject
	id, tok string
	body    apiwire.PromptBody
	sess    store.Session
}

// session is the prompt's session: the one it names (user's own, made
// while the name was uid's), or a new one.
func (s *Server) session(user string, uid uint32, b *apiwire.PromptBody) (store.Session, error) {
	if b.SessionID == "" {
		return s.Store.CreateSession(store.Session{ID: s.newSessionID(user, uid, *b), UnixUser: user, UID: int64(uid), AgenticTool: b.Tool, Cwd: b.Cwd,
			Model: b.Model, PermissionMode: b.PermissionMode, Status: "idle", Environment: b.Environment})
	}
	sess, err := s.Store.GetSession(b.SessionID)
	if err == nil && sess.UnixUser == user && sess.UID != int64(uid) {
		s.mismatch(audit.Record{Session: sess.ID}, user, audit.UIDOf(uid), sess.UID)
	}
	if err != nil || sess.UnixUser != user || sess.UID != int64(uid) {
		return store.Session{}, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no session %q of %s", b.SessionID, user)
	}
	if b.Tool == "" {
		b.Tool = sess.AgenticTool
	}
	b.Sandbox = s.confinedFloor(sess.ID, b.Sandbox)
	return sess, nil
}

func newID() string { return randid.New(16) }
