package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/rpc"
)

// ACP drives an agent CLI that speaks the Agent Client Protocol
// (JSON-RPC 2.0, one message a line, over the process's stdin/stdout,
// spoken through an rpc.Conn): initialize, session/new (or
// session/resume / session/load to continue req.Resume), one
// session/prompt; session/update notifications become events and
// session/request_permission requests go to the daemon.
//
// Permission modes are applied here, on the agent's own questions, so the
// daemon's event log shows every decision: bypassPermissions approves
// every question, acceptEdits approves edits (ACP tool kind "edit"),
// plan denies anything that changes the world (edit, delete, move,
// execute) - each without asking, with the mode as the decision's reason;
// everything else is asked of the daemon. The agent must therefore run in
// its own asking mode (Setup's job).
//
// Usage: ACP 1 has no token figures. A PromptResponse "usage" object (an
// unstable ACP extension: inputTokens, outputTokens, cachedReadTokens,
// cachedWriteTokens) or the same under "_meta" is used when an agent sends
// it; gemini-cli puts the turn's input and output tokens in
// "_meta.quota.token_count" (no cache figures).
type ACP struct {
	Key     string // the API key variable, CredentialKey
	Install string // install advice for a missing binary
	// Setup prepares one run (writes the agent's configuration into
	// HOME, adds variables to req.Env) and returns the CLI's arguments.
	Setup func(req *Request) ([]string, error)
}

var _ Adapter = (*ACP)(nil)

// CredentialKey implements Adapter.
func (a *ACP) CredentialKey() string { return a.Key }

// acpExitGrace is how long an agent has to exit after its stdin closes
// (it may still be writing its session to disk) before it is killed.
const acpExitGrace = 3 * time.Second

// Run implements Adapter.
func (a *ACP) Run(ctx context.Context, req Request, host Host) (Result, error) {
	args, err := a.Setup(&req)
	if err != nil {
		return acpFailed(&Error{Code: protocol.TaskAgentCrashed, Message: "prepare agent: " + err.Error()})
	}
	procCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	p, err := Start(procCtx, req, a.Install, args...)
	if err != nil {
		return acpFailed(err)
	}
	c := &acpClient{host: host}
	var served <-chan struct{}
	c.conn, served = p.ServeRPC(ctx, rpc.HandlerFunc(c.handle), rpc.Options{
		OnLine: keyRedactor(req.Env, a.Key),
		Logger: slog.Default().With("agent", filepath.Base(req.Binary), "task", req.TaskID),
	})
	stopWatch := context.AfterFunc(ctx, kill) // cancellation kills the group at once
	defer stopWatch()
	res, runErr := c.turn(ctx, req)
	waitErr := p.CloseRPC(c.conn, served, acpExitGrace, kill)
	if ctx.Err() != nil {
		return Result{Status: "failed", AgentSession: res.AgentSession, MessageCount: res.MessageCount,
			Err: &Error{Code: "cancelled", Message: context.Cause(ctx).Error()}}, ctx.Err()
	}
	if runErr != nil {
		if res.Err == nil {
			res.Err = acpCrashErr(runErr, waitErr, p)
		}
		res.Status = "failed"
		return res, res.Err
	}
	return res, nil
}

func acpFailed(err error) (Result, error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}
	}
	return Result{Status: "failed", Err: e}, e
}

func acpCrashErr(runErr, waitErr error, p *Proc) *Error {
	var e *Error
	if errors.As(runErr, &e) {
		return e
	}
	msg := runErr.Error()
	if errors.Is(runErr, rpc.ErrClosed) {
		msg = "the agent closed its output"
	}
	if errors.As(waitErr, &e) {
		return &Error{Code: protocol.TaskAgentCrashed, Message: msg + "; " + e.Message}
	}
	return &Error{Code: protocol.TaskAgentCrashed, Message: msg + "; stderr: " + p.Stderr()}
}

// acpClient is the client side of one agent's ACP connection. The
// connection's read loop runs the session/update handler, in the order
// the agent sent them; each permission question is answered on a
// goroutine of its own, so a question waiting for the daemon never stops
// the reading (acpTurn serialises the two).
type acpClient struct {
	conn *rpc.Conn
	host Host

	mu     sync.Mutex
	active *acpTurn // the turn whose updates are being reported
}

// handle serves the agent's notifications and requests.
func (c *acpClient) handle(ctx context.Context, r *rpc.Request) (any, error) {
	t := c.current()
	switch {
	case r.Notification:
		if t != nil && r.Method == "session/update" { // none during a replay
			t.update(r.Params, r.Raw)
		}
		return nil, nil
	case t != nil && r.Method == "session/request_permission":
		return t.permission(ctx, r.Params, r.Raw), nil
	}
	return nil, &rpc.Error{Code: rpc.CodeMethodNotFound, Message: "method not supported by this client: " + r.Method}
}

func (c *acpClient) current() *acpTurn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

func (c *acpClient) setTurn(t *acpTurn) {
	c.mu.Lock()
	c.active = t
	c.mu.Unlock()
}
