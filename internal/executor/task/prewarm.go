package task

import (
	"context"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// prewarm serves prewarm_agent: the agent a prompt with these options
// would start, started now, kept as the session's warm agent until a
// prompt whose options all match takes it (take), or PrewarmIdle.
//
// Only behind the gateway (Validate): the agent gets the placeholder, and
// the relay's door lets its process in only while a turn runs on it, so
// the waiting process holds nothing usable. The raw key is never asked
// for outside a task.
func (s *Service) prewarm(ctx context.Context, r *rpc.Request) (any, error) {
	var pw protocol.PrewarmAgentParams
	if err := rpc.Bind(r.Params, &pw); err != nil {
		return nil, err
	}
	a, err := agent.Lookup(pw.Tool)
	if err != nil {
		return nil, rpc.InvalidParams("agentic_tool", err.Error())
	}
	cwd, err := s.cwd(pw.Cwd)
	if err != nil {
		return nil, err
	}
	pr, ok := a.(agent.Preparer)
	if !ok || !s.Warm.on() || s.Warm.PrewarmIdle <= 0 {
		return refused(protocol.PrewarmOff), nil
	}
	p := pw.Prompt()
	started, why := s.warmingUp(warmKey(p))
	if why != "" {
		return refused(why), nil
	}
	defer started()
	if room := s.pool().room(); room >= 0 && room < prewarmHeadroom {
		s.log().Info("not pre-warmed: near the memory limit", "session", p.SessionID, "room_bytes", room)
		return refused(protocol.PrewarmNoMemory), nil
	}
	s.pool().report.to(r.Conn) // the daemon's cap hears of it, and may release it
	return s.startPrewarm(ctx, p, pr, cwd), nil
}

func refused(reason string) protocol.PrewarmAgentResult {
	return protocol.PrewarmAgentResult{Reason: reason}
}

// startPrewarm resolves the agent exactly as run does for a prompt of
// p's options (the same settings, so take can compare them), confines
// it, and starts it.
func (s *Service) startPrewarm(ctx context.Context, p protocol.ExecutePromptParams, pr agent.Preparer, cwd string) protocol.PrewarmAgentResult {
	if s.pool().has(warmKey(p)) {
		return refused(protocol.PrewarmAlreadyWarm)
	}
	c, err := s.credentials(ctx, nil, true, pr, p.Tool)
	if err != nil {
		return s.prewarmFailed(p, "credentials", err)
	}
	req, err := s.request(p, pr, cwd, c)
	if err != nil {
		return s.prewarmFailed(p, "agents", err)
	}
	floor := s.floor(p)
	want := settingsOf(p, req, s.level(p, floor))
	spec, box, err := s.confine(p, floor, &req)
	if err != nil {
		return s.prewarmFailed(p, "sandbox", err)
	}
	guard := guardGit(spec)
	cleanup := func() { restoreGit(nil, guard); spec.Cleanup() }
	live, err := pr.Prepare(context.WithoutCancel(ctx), req)
	if err != nil {
		cleanup()
		return s.prewarmFailed(p, "start", err)
	}
	w := &warmAgent{key: warmKey(p), settings: want, live: live, agentSession: req.Resume, box: box,
		guard: guard, cleanup: cleanup, level: levelOf(spec)}
	if why := s.pool().putPrewarmed(w); why != "" {
		s.pool().stopLater(w)
		return refused(why)
	}
	s.log().Info("agent pre-warmed", "session", p.SessionID, "agentic_tool", p.Tool, "pid", live.Pid(), "sandbox", string(w.level))
	return protocol.PrewarmAgentResult{Started: true}
}

func levelOf(spec sandbox.Spec) sandbox.Level {
	if spec.Level == "" {
		return sandbox.Off
	}
	return spec.Level
}

func (s *Service) prewarmFailed(p protocol.ExecutePromptParams, what string, err error) protocol.PrewarmAgentResult {
	s.log().Warn("pre-warm failed", "session", p.SessionID, "agentic_tool", p.Tool, "step", what, "err", err)
	return refused(protocol.PrewarmFailed)
}

// turnBegins counts a turn of key's running until the returned func,
// once the session's pre-warm being started, if one is, is done (kept or
// given up): the turn takes it or stops it then, rather than start a
// second process of the session beside it.
func (s *Service) turnBegins(ctx context.Context, key string) (done func()) {
	done, starting := s.turnRuns(key)
	if starting != nil {
		select {
		case <-starting:
		case <-ctx.Done():
		}
	}
	return done
}

// turnRuns counts a turn of key's running until done. starting is the
// session's pre-warm being started, if one is (closed when it is kept or
// given up): the turn waits for it, to take it or stop it, rather than
// start a second process of the session beside it.
func (s *Service) turnRuns(key string) (done func(), starting <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == nil {
		s.busy = map[string]int{}
	}
	s.busy[key]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.busy[key]--; s.busy[key] == 0 {
			delete(s.busy, key)
		}
	}, s.warming[key]
}

// warmingUp marks key's pre-warm as being started until started; refused
// (a reason) while a turn of key's runs (its agent is out of the pool,
// and would only replace the pre-warm when the turn ends) or another
// pre-warm of key's is being started. A turn that begins meanwhile
// waits for it (turnRuns).
func (s *Service) warmingUp(key string) (started func(), refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.busy[key] > 0:
		return nil, protocol.PrewarmRunning
	case s.warming[key] != nil:
		return nil, protocol.PrewarmAlreadyWarm
	}
	if s.warming == nil {
		s.warming = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	s.warming[key] = ch
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.warming, key)
		close(ch)
	}, ""
}
