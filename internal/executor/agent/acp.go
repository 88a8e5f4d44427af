package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
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
	// Boot, when set, is run by a prepared process's handshake once its
	// session is open: what the agent would otherwise do on its first
	// prompt and can be asked to do now (opencodeBoot).
	Boot func(ctx context.Context, p *Proc, req Request)
	// ToolOutput, when set, finds what a finished tool call printed when
	// the agent's tool_call_update carries nothing (gemini's shell tool):
	// from the agent's own session record, found from its environment.
	ToolOutput func(ctx context.Context, env []string, sessionID, toolCallID string) string
	// UI, when set, is the CLI's own interactive UI (acp_tui.go).
	UI *ACPScreen
}

var _ Opener = (*ACP)(nil)

// CredentialKey implements Adapter.
func (a *ACP) CredentialKey() string { return a.Key }

// acpExitGrace is how long an agent has to exit after its stdin closes
// (it may still be writing its session to disk) before it is killed.
const acpExitGrace = 3 * time.Second

// Run implements Adapter: Open, without keeping the process.
func (a *ACP) Run(ctx context.Context, req Request, host Host) (Result, error) {
	return runOnce(ctx, a, req, host)
}

// Open implements Opener: an ACP session takes any number of
// session/prompt calls on one process.
func (a *ACP) Open(ctx context.Context, req Request, host Host) (Result, Live, error) {
	l, res, err := a.start(ctx, &req)
	if l == nil {
		return res, nil, err
	}
	stopWatch := context.AfterFunc(ctx, l.kill) // cancelled while starting: kill at once
	sid, err := l.c.open(ctx, req)
	stopWatch()
	if err != nil {
		res := Result{AgentSession: req.Resume}
		l.sid = req.Resume
		return l.end(ctx, res, err)
	}
	l.sid = sid
	res, err = l.Turn(ctx, req, host)
	if !l.Usable() {
		return res, nil, err
	}
	return res, l, err
}

// Prepare implements Preparer: the agent is started, and initialize
// and its session's start (or resume) run on a goroutine; the first
// Turn waits for them.
func (a *ACP) Prepare(ctx context.Context, req Request) (Live, error) {
	l, _, err := a.start(ctx, &req)
	if l == nil {
		return nil, err
	}
	l.ready = handshake(ctx, &l.readyErr, func(hctx context.Context) error {
		sid, err := l.c.open(hctx, req)
		l.sid = sid
		if err == nil && a.Boot != nil {
			a.Boot(hctx, l.p, req)
		}
		return err
	})
	return l, nil
}

// start prepares and starts the agent and serves its connection; the
// process and its connection outlive ctx (a stopped turn is cancelled
// with session/cancel). No process: the Result and error say why.
func (a *ACP) start(ctx context.Context, req *Request) (*acpLive, Result, error) {
	args, err := a.Setup(req)
	if err != nil {
		res, err := acpFailed(&Error{Code: protocol.TaskAgentCrashed, Message: "prepare agent: " + err.Error()})
		return nil, res, err
	}
	procCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	p, err := Start(procCtx, *req, a.Install, args...)
	if err != nil {
		kill()
		res, err := acpFailed(err)
		return nil, res, err
	}
	l := &acpLive{p: p, kill: kill, c: &acpClient{}}
	if a.ToolOutput != nil {
		env := req.Env
		l.c.toolOutput = func(ctx context.Context, sid, id string) string { return a.ToolOutput(ctx, env, sid, id) }
	}
	l.c.conn, l.served = p.ServeRPC(procCtx, rpc.HandlerFunc(l.c.handle), rpc.Options{
		OnLine: keyRedactor(req.Env, a.Key),
		Logger: slog.Default().With("agent", filepath.Base(req.Binary), "task", req.TaskID),
	})
	return l, Result{}, nil
}

// acpLive is one ACP agent process and its session, across turns.
type acpLive struct {
	p      *Proc
	kill   context.CancelFunc
	c      *acpClient
	served <-chan struct{}
	sid    string
	turns  int
	closed bool
	once   sync.Once
	// ready is closed when a prepared process's handshake is over
	// (readyErr its outcome); nil when a turn opened the process.
	ready    <-chan struct{}
	readyErr error
}

var _ Live = (*acpLive)(nil)

func (l *acpLive) Pid() int { return l.p.Pid() }

// CanSwitchMode: this client applies the permission mode itself, per turn.
func (l *acpLive) CanSwitchMode(string) bool { return true }

// CanSwitchModel: no; ACP's session/set_model is unstable and not in
// every agent's version, so another model is a restart.
func (l *acpLive) CanSwitchModel(string) bool { return false }

func (l *acpLive) Usable() bool {
	select {
	case <-l.c.conn.Done():
		return false
	default:
	}
	return !l.closed && l.p.Alive()
}

// Turn sends one session/prompt. When ctx ends, session/cancel asks the
// agent to end the turn; it is killed if it has not within
// interruptGrace.
func (l *acpLive) Turn(ctx context.Context, req Request, host Host) (Result, error) {
	warm := l.turns > 0 || l.ready != nil
	l.turns++
	if err := awaitHandshake(ctx, l.ready, &l.readyErr); err != nil || !l.Usable() {
		return l.gone(ctx, err)
	}
	ch := &counting{Host: host}
	var (
		gmu   sync.Mutex
		grace *time.Timer
		over  bool // the turn ended: a late cancel is not for it
	)
	stop := context.AfterFunc(ctx, func() {
		gmu.Lock()
		defer gmu.Unlock()
		if !over {
			grace = time.AfterFunc(interruptGrace, l.kill)
			_ = l.c.conn.Notify("session/cancel", map[string]string{"sessionId": l.sid})
		}
	})
	res, err := l.c.prompt(ctx, l.sid, req, ch)
	stop()
	gmu.Lock()
	over = true
	if grace != nil {
		grace.Stop()
	}
	gmu.Unlock()
	l.p.ReapStrays()
	if err != nil && warm && ch.silent() && ctx.Err() == nil && !l.Usable() {
		l.Close()
		return Result{}, ErrGone
	}
	if ctx.Err() != nil || !l.Usable() {
		if !l.Usable() {
			res, _, err := l.end(ctx, res, err)
			return res, err
		}
		return Result{Status: "failed", AgentSession: res.AgentSession, MessageCount: res.MessageCount,
			Err: &Error{Code: "cancelled", Message: context.Cause(ctx).Error()}}, ctx.Err()
	}
	if err != nil {
		if res.Err == nil {
			res.Err = acpCrashErr(err, nil, l.p)
		}
		res.Status = "failed"
		return res, res.Err
	}
	return res, nil
}

// gone closes a process that cannot take the turn: stopped while its
// handshake ran (err is ctx's), or gone (ErrGone: the turn runs cold).
func (l *acpLive) gone(ctx context.Context, err error) (Result, error) {
	l.Close()
	if err != nil && ctx.Err() != nil {
		return Result{Status: "failed", Err: &Error{Code: "cancelled", Message: context.Cause(ctx).Error()}}, ctx.Err()
	}
	if err != nil {
		return Result{}, err
	}
	return Result{}, ErrGone
}

// end closes the process after a turn that could not go on, and settles
// the Result as Run always has.
func (l *acpLive) end(ctx context.Context, res Result, runErr error) (Result, Live, error) {
	waitErr := l.close()
	if ctx.Err() != nil {
		return Result{Status: "failed", AgentSession: res.AgentSession, MessageCount: res.MessageCount,
			Err: &Error{Code: "cancelled", Message: context.Cause(ctx).Error()}}, nil, ctx.Err()
	}
	if runErr != nil {
		if res.Err == nil {
			res.Err = acpCrashErr(runErr, waitErr, l.p)
		}
		res.Status = "failed"
		return res, nil, res.Err
	}
	return res, nil, nil
}

// Close closes the agent's stdin and waits for it to exit (killed after
// acpExitGrace).
func (l *acpLive) Close() { _ = l.close() }

func (l *acpLive) close() error {
	var err error
	l.once.Do(func() {
		l.closed = true
		err = l.p.CloseRPC(l.c.conn, l.served, acpExitGrace, l.kill)
		l.kill()
		if l.ready != nil {
			<-l.ready // the handshake ends with the process
		}
	})
	return err
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
	conn       *rpc.Conn
	toolOutput func(ctx context.Context, sid, toolCallID string) string // ACP.ToolOutput, for this agent's HOME

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
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(t.ctx, cancel)() // a stopped turn answers "cancelled"
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
