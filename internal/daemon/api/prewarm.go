package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/reserve"
	"github.com/agor-sh/agor/internal/randid"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// prewarmTimeout bounds a pre-warm: starting the executor, if it is not
// running, and the agent's process (not its handshake, which goes on).
const prewarmTimeout = 60 * time.Second

// prewarmRoute serves POST /v1/executors/{user}/prewarm: a prompt's
// options, without the prompt, whose agent the executor starts now so
// that the prompt, when it comes, does not wait for the CLI's start; in
// the environment the prompt would run in.
// Answered 202 whether or not an agent was started: a pre-warm is a
// hint, and a prompt runs the same without it.
func (s *Server) prewarmRoute(w http.ResponseWriter, r *http.Request) {
	var b apiwire.PromptBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	t, err := s.routeEnv(r.Context(), subjectOf(r), &b)
	if err != nil {
		writeError(w, err)
		return
	}
	out, err := s.prewarm(r.Context(), t, b)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// prewarm resolves b as a prompt of t's would be (readPrompt, session;
// t and b already routed to their environment, routeEnv), for its
// session (the one named, or an id reserved for t's next new session of
// these options), and has t's executor start the agent behind the
// gateway: with the placeholder, no credential (none serves before a
// task runs on it). Without the gateway there is no pre-warm: the agent
// would need the raw key before any task.
func (s *Server) prewarm(ctx context.Context, t subject, b apiwire.PromptBody) (apiwire.PrewarmAccepted, error) {
	if s.Gateway == nil || s.PrewarmIdle <= 0 || s.Store == nil {
		return s.prewarmRefused("", "off"), nil
	}
	b.Prompt = ""
	if b.PermissionMode == "" {
		b.PermissionMode = string(broker.ModeDefault)
	}
	p, err := s.prewarmParams(t, b)
	if err != nil {
		return apiwire.PrewarmAccepted{}, err
	}
	if s.Gateway.Direct(p.Tool) { // its prompts get the raw key, which no process holds before a task
		return s.prewarmRefused(p.SessionID, "direct_agent"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, prewarmTimeout)
	defer cancel()
	_, ping, err := s.Pool.Get(ctx, t.Executor)
	if err != nil {
		return apiwire.PrewarmAccepted{}, err
	}
	if ping.Protocol < protocol.RevisionDoor { // below it, the agent would hold a credential
		return s.prewarmRefused(p.SessionID, "executor_too_old"), nil
	}
	p.Gateway = true
	var res protocol.PrewarmAgentResult
	if err := s.Pool.Call(ctx, t.Executor, protocol.MethodPrewarmAgent, p, &res); err != nil {
		return apiwire.PrewarmAccepted{}, err
	}
	if !res.Started {
		return s.prewarmRefused(p.SessionID, res.Reason), nil
	}
	s.metrics.prewarm("started")
	return apiwire.PrewarmAccepted{SessionID: p.SessionID, Status: "started"}, nil
}

func (s *Server) prewarmRefused(session, reason string) apiwire.PrewarmAccepted {
	s.metrics.prewarm("refused")
	return apiwire.PrewarmAccepted{SessionID: session, Status: "refused", Reason: reason}
}

// prewarmParams are prewarm_agent's params for b, resolved as its prompt
// would be: the level, the session's floor and resume, and the checks a
// prompt passes before any agent starts (store room, budget).
func (s *Server) prewarmParams(t subject, b apiwire.PromptBody) (protocol.PrewarmAgentParams, error) {
	if err := protocol.ValidPermissionMode(b.PermissionMode); err != nil {
		return protocol.PrewarmAgentParams{}, err
	}
	var err error
	b.Sandbox, err = s.sandboxLevel(s.Sandbox.PromptLevel(b.Sandbox), b.Cwd)
	if err == nil {
		err = s.Store.RoomForWork()
	}
	if err == nil {
		err = s.budgetLeft(t.Person)
	}
	if err != nil {
		return protocol.PrewarmAgentParams{}, err
	}
	p := protocol.PrewarmAgentParams{SessionID: b.SessionID, Tool: b.Tool, Cwd: b.Cwd, PermissionMode: b.PermissionMode,
		Model: b.Model, Sandbox: b.Sandbox}
	if b.SessionID == "" {
		if b.Tool == "" {
			return p, rpc.InvalidParams("agentic_tool", "required")
		}
		p.SessionID = s.reserved.Reserve(reserve.Key(t.Person, t.UID, b), s.PrewarmIdle, time.Now())
		return p, nil
	}
	return p, s.prewarmSession(t, &p)
}

// prewarmSession fills p for its existing session, t's own: the tool it
// ran, the floor its confined turns set, and the agent session a prompt
// of the same tool and cwd resumes (runPrompt).
func (s *Server) prewarmSession(t subject, p *protocol.PrewarmAgentParams) error {
	sess, err := s.Store.GetSession(p.SessionID)
	if err != nil || sess.UnixUser != t.Person || sess.UID != int64(t.UID) {
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no session %q of %s", p.SessionID, t.Person)
	}
	if p.Tool == "" {
		p.Tool = sess.AgenticTool
	}
	p.Sandbox = s.confinedFloor(sess.ID, p.Sandbox)
	if sess.AgenticTool == p.Tool && sess.Cwd == p.Cwd {
		p.AgentSessionID = sess.AgentSessionID
	}
	return nil
}

// newSessionID is the id of a new session of user's with b's options:
// the one reserved for them by a pre-warm, else a fresh one.
func (s *Server) newSessionID(user string, uid uint32, b apiwire.PromptBody) string {
	if id := s.reserved.Claim(reserve.Key(user, uid, b), time.Now()); id != "" {
		s.metrics.prewarm("claimed")
		return id
	}
	return randid.New(16)
}

// prewarmLater is prewarm with the daemon's lifetime, for a session just
// made without a prompt (one is coming). Shutdown cancels and waits.
func (s *Server) prewarmLater(t subject, b apiwire.PromptBody) {
	s.background(func(ctx context.Context) {
		if out, err := s.prewarm(ctx, t, b); err != nil || out.Status != "started" {
			s.log().Debug("session not pre-warmed", "session", b.SessionID, "reason", out.Reason, "err", err)
		}
	})
}
