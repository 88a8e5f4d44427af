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

	"github.com/agor-sh/agor/internal/agent"
	"github.com/agor-sh/agor/internal/fsroot"
	"github.com/agor-sh/agor/internal/rpc"
)

// Holder keeps the executor alive while a task runs (executor.Server).
type Holder interface{ Hold() (release func()) }

// Service runs the executor's tasks.
type Service struct {
	Root   *fsroot.Root
	Hold   Holder
	Agents Agents
	Log    *slog.Logger

	mu       sync.Mutex
	running  map[string]context.CancelCauseFunc // by task_id
	sessions map[string]string                  // session_id + tool → the agent's own session id
}

// Register adds execute_prompt and stop_task to m.
func (s *Service) Register(m *rpc.Mux) {
	m.Register("execute_prompt", s.execute)
	m.Register("stop_task", rpc.Method(s.stop))
}

// errStopped is the cause of a task ended by stop_task.
var errStopped = errors.New("stopped by stop_task")

func (s *Service) execute(ctx context.Context, r *rpc.Request) (any, error) {
	var p Params
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
	ctx, cancel, err := s.start(ctx, p)
	if err != nil {
		return nil, err
	}
	defer cancel(nil)
	if s.Hold != nil {
		defer s.Hold.Hold()()
	}
	return s.run(ctx, r.Conn, p, a, cwd), nil
}

// start registers the task so stop_task can end it, under its time limit.
func (s *Service) start(ctx context.Context, p Params) (context.Context, context.CancelCauseFunc, error) {
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

func (s *Service) run(ctx context.Context, conn *rpc.Conn, p Params, a agent.Adapter, cwd string) Result {
	h := &host{conn: conn, token: p.SessionToken, task: p.TaskID, log: s.log()}
	key, err := h.apiKey(ctx, a.CredentialKey())
	if err != nil && ctx.Err() != nil {
		return s.result(ctx, agent.Result{}, err) // stopped or timed out while asking
	}
	if err != nil {
		return failed(agent.CodeCredentialMissing, err.Error())
	}
	req := agent.Request{
		SessionID: p.SessionID, TaskID: p.TaskID, Prompt: p.Prompt, Cwd: cwd, Model: p.Model,
		PermissionMode: p.PermissionMode, Resume: s.resume(p),
	}
	req.Binary, req.Env = s.Agents.command(p.Tool, a.CredentialKey(), key)
	res, err := a.Run(ctx, req, h)
	out := s.result(ctx, res, err)
	if res.AgentSession != "" {
		s.remember(p, res.AgentSession)
		out.AgentSessionID = res.AgentSession
	}
	s.log().Info("task ended", "task", p.TaskID, "agentic_tool", p.Tool, "status", out.Status, "messages", out.MessageCount)
	return out
}

// result adds timeout and cancellation to the adapter's outcome.
func (s *Service) result(ctx context.Context, res agent.Result, err error) Result {
	out := Result{Status: res.Status, MessageCount: res.MessageCount, Usage: res.Usage, Error: res.Err}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, context.DeadlineExceeded):
		out.Status, out.Error = "timeout", &agent.Error{Code: agent.CodeTimeout, Message: "timeout_ms reached"}
	case ctx.Err() != nil:
		out.Status, out.Error = "cancelled", &agent.Error{Code: "cancelled", Message: fmt.Sprint(cause)}
	case err != nil:
		var ae *agent.Error
		if !errors.As(err, &ae) {
			ae = &agent.Error{Code: agent.CodeAgentCrashed, Message: err.Error()}
		}
		out.Status, out.Error = "failed", ae
	case out.Status == "":
		out.Status = "completed"
	}
	return out
}

func failed(code, msg string) Result {
	return Result{Status: "failed", Error: &agent.Error{Code: code, Message: msg}}
}

func (s *Service) stop(_ context.Context, p StopParams) (StopResult, error) {
	s.mu.Lock()
	cancel := s.running[p.TaskID]
	s.mu.Unlock()
	if cancel == nil {
		return StopResult{}, rpc.Errorf(rpc.CodeTaskNotFound, "task_not_found", "no running task %q", p.TaskID)
	}
	cause := errStopped
	if p.Reason != "" {
		cause = fmt.Errorf("%w: %s", errStopped, p.Reason)
	}
	cancel(cause)
	return StopResult{Stopped: true}, nil
}

// cwd resolves the task's directory beneath the root and returns its real
// path (the agent CLIs need a path, not a descriptor).
func (s *Service) cwd(p string) (string, error) {
	if s.Root == nil {
		return "", rpc.Errorf(rpc.CodeExecutorUnavailable, "no_root", "this executor has no root directory")
	}
	dir, err := s.Root.OpenDir(p)
	if err != nil {
		return "", fsErr("cwd", err)
	}
	defer dir.Close()
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	if err != nil {
		return "", err
	}
	return real, nil
}

func fsErr(field string, err error) error {
	switch {
	case errors.Is(err, fsroot.ErrEscape):
		return rpc.Errorf(rpc.CodePermissionDenied, "path_escape", "%s: %v", field, err)
	case errors.Is(err, os.ErrNotExist):
		return rpc.Errorf(rpc.CodeNotFound, "not_found", "%s: %v", field, err)
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid_params", "%s: %v", field, err)
}

// resume is the agent session to continue: the one the daemon names, else
// the one this executor saw last for the session.
func (s *Service) resume(p Params) string {
	if p.AgentSessionID != "" {
		return p.AgentSessionID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[sessionKey(p)]
}

// sessionKey has the cwd: agents find their sessions by directory.
func sessionKey(p Params) string { return p.SessionID + "\x00" + p.Tool + "\x00" + p.Cwd }

func (s *Service) remember(p Params, agentSession string) {
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
