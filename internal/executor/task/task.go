// Package task serves execute_prompt and stop_task in the executor: it
// runs one agent turn through the agent package's adapter for the task's
// agentic_tool, as the executor's user, in the task's cwd, with the API key
// fetched from the daemon just in time; streams the normalised events to
// the daemon as report_message; and asks the daemon for every permission.
package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Holder keeps the executor alive while a task runs (executor.Server).
type Holder interface{ Hold() (release func()) }

// Service runs the executor's tasks.
type Service struct {
	Root *fsroot.Root
	Hold Holder
	// AgentsFile is agents.yaml, read again when it changes; nil: Agents
	// are the settings.
	AgentsFile *AgentsFile
	Agents     Agents
	Log        *slog.Logger
	// Sandbox confines agents whose task asks for it (nil: only "off").
	Sandbox *sandbox.Policy
	// Warm bounds the agent processes kept for their session's next
	// prompt (zero: none is kept, every prompt starts its agent).
	Warm WarmLimits
	// GatewaySocket is the daemon's model gateway, relayed from a
	// loopback port for tasks that carry a gateway token.
	GatewaySocket string
	gw            gatewayRelay
	// Terminals runs interactive tasks' agent UIs (screen.go); nil: none.
	Terminals Terminals

	warmOnce sync.Once
	warm     *warmPool
	mu       sync.Mutex
	running  map[string]context.CancelCauseFunc // by task_id
	owned    map[string]*owned                  // running, or ended and not yet taken (owned.go)
	sessions map[string]string                  // session_id + tool → the agent's own session id
	confined map[string]sandbox.Level           // session_id + tool → the level it last ran confined at
	busy     map[string]int                     // session_id + tool → its turns running (prewarm.go)
	warming  map[string]chan struct{}           // session_id + tool → its pre-warm being started, closed when done
}

// Register adds execute_prompt and stop_task to m.
func (s *Service) Register(m *rpc.Mux) {
	m.Register(protocol.MethodExecutePrompt, s.execute)
	m.Register(protocol.MethodStopTask, rpc.Method(s.stop))
	m.Register(protocol.MethodResumeTask, s.resumeTask)
	m.Register(protocol.MethodReleaseWarmAgent, rpc.Method(s.releaseWarm))
	m.Register(protocol.MethodPrewarmAgent, s.prewarm)
	m.Register(protocol.MethodTaskNotice, rpc.Method(s.notice))
}

// errStopped is the cause of a task ended by stop_task.
var errStopped = errors.New("stopped by stop_task")

func (s *Service) execute(ctx context.Context, r *rpc.Request) (any, error) {
	var p protocol.ExecutePromptParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	a, err := agent.Lookup(p.Tool)
	if err != nil {
		return nil, rpc.InvalidParams("agentic_tool", err.Error())
	}
	cwd, err := s.cwd(p.Cwd)
	if err != nil {
		return nil, err
	}
	// The task runs on when this connection goes (owned.go): its context
	// keeps the request's values, not its end.
	tctx, cancel, err := s.start(context.WithoutCancel(ctx), p)
	if err != nil {
		return nil, err
	}
	s.pool().report.to(r.Conn) // prompts come from the daemon: so do releases
	s.gw.to(r.Conn)
	release := func() {}
	if s.Hold != nil {
		release = s.Hold.Hold()
	}
	h := newHost(p.TaskID, r.Conn, p.SessionToken, s.log())
	o := s.own(p.TaskID, h)
	go func() {
		defer release()
		defer cancel(nil)
		s.ended(p.TaskID, o, s.run(tctx, h, p, a, cwd))
	}()
	return o.wait(ctx)
}

// Interrupt cancels every running task (the executor is stopping and
// its grace has passed); each ends "cancelled".
func (s *Service) Interrupt(cause error) {
	s.mu.Lock()
	cancels := make([]context.CancelCauseFunc, 0, len(s.running))
	for _, c := range s.running {
		cancels = append(cancels, c)
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c(cause)
	}
	s.letResultsGo()
}

// start registers the task so stop_task can end it, under its time limit.
func (s *Service) start(ctx context.Context, p protocol.ExecutePromptParams) (context.Context, context.CancelCauseFunc, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	if p.TimeoutMS > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, time.Duration(p.TimeoutMS)*time.Millisecond, context.DeadlineExceeded)
		inner := cancel
		cancel = func(err error) { inner(err); stop() } // the cause first: stop would record "canceled"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[string]context.CancelCauseFunc{}
	}
	if _, dup := s.running[p.TaskID]; dup {
		cancel(nil)
		return nil, nil, rpc.Errorf(rpc.CodeInvalidParams, "duplicate_task", "task %q is already running", p.TaskID)
	}
	s.running[p.TaskID] = cancel
	return ctx, func(err error) {
		s.mu.Lock()
		delete(s.running, p.TaskID)
		s.mu.Unlock()
		cancel(err)
	}, nil
}

func (s *Service) run(ctx context.Context, h *host, p protocol.ExecutePromptParams, a agent.Adapter, cwd string) protocol.ExecutePromptResult {
	// The key is fetched for a warm turn too: the daemon's answer is its
	// check of the task's token, and a rotated key restarts the agent. A
	// warm process keeps the key it was started with in its own
	// environment, as it would for a long turn: never in the executor's.
	key := warmKey(p)
	defer s.turnBegins(ctx, key)()
	c, err := s.credentials(ctx, h, p.GatewayToken != "", a, p.Tool)
	if err != nil && ctx.Err() != nil {
		return s.result(ctx, agent.Result{}, err) // stopped or timed out while asking
	}
	if err != nil {
		return failed(protocol.TaskCredentialMissing, err.Error())
	}
	req, err := s.request(p, a, cwd, c)
	if err != nil {
		return failed(protocol.TaskAgentMissing, err.Error())
	}
	// The relay lets in what descends from the agent's process, this
	// task's turn only; a warm agent's next turn opens its own.
	turn := s.gw.open(p)
	defer turn.Close()
	req.Started = turn.Started
	floor := s.floor(p)
	if p.Interactive != nil {
		return s.runScreen(ctx, h, p, a, req, turn, floor)
	}
	want := settingsOf(p, req, s.level(p, floor))
	if w := s.pool().take(key, want); w != nil {
		if out, ok := s.runWarm(ctx, p, req, h, w); ok {
			return out
		}
	}
	if err := s.pool().exited(ctx, key); err != nil {
		return s.result(ctx, agent.Result{}, err)
	}
	return s.runCold(ctx, h, p, a, req, want, floor)
}

// runCold runs the turn on a new agent process, confined at floor's
// level, kept warm afterwards when it can be.
func (s *Service) runCold(ctx context.Context, h *host, p protocol.ExecutePromptParams, a agent.Adapter, req agent.Request, want settings, floor sandbox.Level) protocol.ExecutePromptResult {
	spec, box, err := s.confine(p, floor, &req)
	if err != nil {
		return failed(protocol.TaskSandbox, err.Error())
	}
	if box != nil {
		h.Emit(sandboxEvent(*box))
	}
	s.rememberConfined(p, spec.Level)
	guard := guardGit(spec)
	res, live, err := s.open(ctx, a, req, h)
	restoreGit(h, guard)
	out := s.result(ctx, res, err)
	out.Sandbox, out.Warnings = h.sandbox(box), h.warnings()
	if res.AgentSession != "" {
		s.remember(p, res.AgentSession)
		out.AgentSessionID = res.AgentSession
	}
	if live != nil {
		s.pool().put(&warmAgent{key: warmKey(p), settings: want, live: live,
			agentSession: res.AgentSession, box: box, guard: guard, cleanup: func() { restoreGit(nil, guard); spec.Cleanup() }})
	} else {
		spec.Cleanup()
	}
	s.log().Info("task ended", "task", p.TaskID, "agentic_tool", p.Tool, "status", out.Status, "messages", out.MessageCount, "events", h.produced(), "warm", false)
	return out
}

// request is what p's agent runs with: c's key (or the gateway's
// placeholder) and address in the environment agents.yaml gives its binary.
func (s *Service) request(p protocol.ExecutePromptParams, a agent.Adapter, cwd string, c creds) (agent.Request, error) {
	req := agent.Request{
		SessionID: p.SessionID, TaskID: p.TaskID, Prompt: p.Prompt, Cwd: cwd, Model: p.Model,
		PermissionMode: p.PermissionMode, Resume: s.resume(p),
	}
	agents, err := s.agents()
	if err != nil {
		return req, err
	}
	req.Binary, req.Env = agents.command(p.Tool, a.CredentialKey(), c.key, p.SessionID, c.env)
	req.Env = ownSignIn(p.Tool, c.gateway, req.Env)
	return req, nil
}

// open runs the turn on a new agent process, kept afterwards when warm
// agents are on and the adapter can keep it.
func (s *Service) open(ctx context.Context, a agent.Adapter, req agent.Request, h *host) (agent.Result, agent.Live, error) {
	if o, ok := a.(agent.Opener); ok && s.Warm.on() {
		return o.Open(ctx, req, h)
	}
	res, err := a.Run(ctx, req, h)
	return res, nil, err
}

// runWarm runs the turn on the session's warm agent; false when its
// process turned out to be gone before the turn began (nothing was
// reported: the caller runs the turn cold, resuming the session).
func (s *Service) runWarm(ctx context.Context, p protocol.ExecutePromptParams, req agent.Request, h *host, w *warmAgent) (protocol.ExecutePromptResult, bool) {
	if !w.live.Usable() {
		s.pool().stopLater(w)
		return protocol.ExecutePromptResult{}, false
	}
	if w.box != nil {
		h.Emit(sandboxEvent(*w.box))
	}
	if req.Started != nil { // the door lets its kept process in, for this turn
		req.Started(w.live.Pid())
	}
	prewarmed := w.prewarmed
	if prewarmed { // its level counts from its first turn, as a cold one's does
		s.rememberConfined(p, w.level)
		w.prewarmed = false
	}
	res, err := w.live.Turn(ctx, req, h)
	restoreGit(h, w.guard)
	if errors.Is(err, agent.ErrGone) {
		s.log().Info("warm agent cannot run the turn; resuming cold", "task", p.TaskID, "agentic_tool", p.Tool, "err", err)
		s.pool().stopLater(w)
		return protocol.ExecutePromptResult{}, false
	}
	out := s.result(ctx, res, err)
	out.Sandbox, out.Warm, out.Prewarmed, out.Warnings = h.sandbox(w.box), !prewarmed, prewarmed, h.warnings()
	if res.AgentSession != "" {
		w.agentSession = res.AgentSession
	}
	if w.agentSession != "" {
		s.remember(p, w.agentSession)
		out.AgentSessionID = w.agentSession
	}
	s.pool().put(w)
	s.log().Info("task ended", "task", p.TaskID, "agentic_tool", p.Tool, "status", out.Status, "messages", out.MessageCount, "events", h.produced(), "warm", !prewarmed, "prewarmed", prewarmed)
	return out, true
}

// pool is the warm agents, made on first use.
func (s *Service) pool() *warmPool {
	s.warmOnce.Do(func() { s.warm = newWarmPool(s.Warm, s.Hold, s.log()) })
	return s.warm
}

// Close stops the warm agents (the executor is exiting).
func (s *Service) Close() { s.pool().close(); s.gw.close() }

// result adds timeout and cancellation to the adapter's outcome.
func (s *Service) result(ctx context.Context, res agent.Result, err error) protocol.ExecutePromptResult {
	out := protocol.ExecutePromptResult{Status: res.Status, MessageCount: res.MessageCount, Usage: res.Usage, Error: res.Err}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, context.DeadlineExceeded):
		out.Status, out.Error = "timeout", &agent.Error{Code: protocol.TaskTimeout, Message: "timeout_ms reached"}
	case ctx.Err() != nil:
		out.Status, out.Error = "cancelled", &agent.Error{Code: "cancelled", Message: fmt.Sprint(cause)}
	case err != nil:
		var ae *agent.Error
		if !errors.As(err, &ae) {
			ae = &agent.Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}
		}
		out.Status, out.Error = "failed", ae
	case out.Status == "":
		out.Status = "completed"
	}
	return out
}

// agents are the agent settings for a prompt starting now.
func (s *Service) agents() (Agents, error) {
	if s.AgentsFile == nil {
		return s.Agents, nil
	}
	return s.AgentsFile.Current()
}

func failed(code, msg string) protocol.ExecutePromptResult {
	return protocol.ExecutePromptResult{Status: "failed", Error: &agent.Error{Code: code, Message: msg}}
}

// releaseWarm stops a warm agent the daemon asks back for the host's cap
// of warm agents; a session with none (or running a turn) is no error.
func (s *Service) releaseWarm(_ context.Context, p protocol.ReleaseWarmAgentParams) (protocol.ReleaseWarmAgentResult, error) {
	why := p.Reason
	if why == "" {
		why = "host cap"
	}
	return protocol.ReleaseWarmAgentResult{Released: s.pool().release(keyOf(p.SessionID, p.Tool), p.LastUsedMS, why)}, nil
}

func (s *Service) stop(_ context.Context, p protocol.StopTaskParams) (protocol.StopTaskResult, error) {
	s.mu.Lock()
	cancel := s.running[p.TaskID]
	s.mu.Unlock()
	if cancel == nil {
		return protocol.StopTaskResult{}, rpc.Errorf(protocol.CodeTaskNotFound, protocol.ReasonTaskNotFound, "no running task %q", p.TaskID)
	}
	cause := errStopped
	if p.Reason != "" {
		cause = fmt.Errorf("%w: %s", errStopped, p.Reason)
	}
	cancel(cause)
	return protocol.StopTaskResult{Stopped: true}, nil
}

// cwd resolves the task's directory beneath the root and returns its real
// path (the agent CLIs need a path, not a descriptor).
func (s *Service) cwd(p string) (string, error) {
	if s.Root == nil {
		return "", rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonNoRoot, "this executor has no root directory")
	}
	dir, err := s.Root.OpenDir(p)
	if err != nil {
		return "", fsroot.WireErr("cwd", err)
	}
	defer dir.Close()
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	if err != nil {
		return "", err
	}
	return real, nil
}

// resume is the agent session to continue: the one the daemon names, else
// the one this executor saw last for the session.
func (s *Service) resume(p protocol.ExecutePromptParams) string {
	if p.AgentSessionID != "" {
		return p.AgentSessionID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[sessionKey(p)]
}

// sessionKey has the cwd: agents find their sessions by directory.
func sessionKey(p protocol.ExecutePromptParams) string {
	return p.SessionID + "\x00" + p.Tool + "\x00" + p.Cwd
}

func (s *Service) remember(p protocol.ExecutePromptParams, agentSession string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = map[string]string{}
	}
	s.sessions[sessionKey(p)] = agentSession
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
