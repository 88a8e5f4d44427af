package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// codexLive is one codex app-server process and its thread, across turns.
// Its connection's handler passes codex's messages to the current turn.
type codexLive struct {
	p               *Proc
	kill            context.CancelFunc
	conn            *rpc.Conn
	served          <-chan struct{}
	policy, sandbox string
	redact          func([]byte) []byte
	threadID        string
	mode            string // the thread's policies after the last turn/start ("" unknown: resumed)
	model           string // the thread's model as last named ("" config.toml's)
	turns           int
	// ready is closed when a prepared process's handshake is over
	// (readyErr its outcome); nil when a turn opened the process.
	ready    <-chan struct{}
	readyErr error
	once     sync.Once
	closed   bool

	mu   sync.Mutex
	task string     // the current turn's task, for traces
	turn *codexTurn // the current turn (nil between turns)
}

var _ Live = (*codexLive)(nil)

func (l *codexLive) Pid() int { return l.p.Pid() }

// CanSwitchMode: each turn/start carries the mode's approval and sandbox
// policies (they hold for the thread's later turns too).
func (l *codexLive) CanSwitchMode(string) bool { return true }

// CanSwitchModel: turn/start names a model for the thread's turns from
// then on; back to config.toml's model ("") is a restart, as there is no
// name to give it.
func (l *codexLive) CanSwitchModel(model string) bool { return model != "" }

func (l *codexLive) Usable() bool {
	select {
	case <-l.conn.Done():
		return false
	default:
	}
	return !l.closed && l.p.Alive()
}

func (l *codexLive) current() *codexTurn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turn
}

func (l *codexLive) setTurn(t *codexTurn, task string) {
	l.mu.Lock()
	l.turn, l.task = t, task
	l.mu.Unlock()
}

// line sees each line codex writes: the key is redacted before anything
// (events' Raw, traces) keeps it.
func (l *codexLive) line(line []byte) []byte {
	line = l.redact(line)
	if codexTrace != nil {
		l.mu.Lock()
		task := l.task
		l.mu.Unlock()
		codexTrace(task, line)
	}
	return line
}

// handle serves codex's notifications and requests, for the current turn.
func (l *codexLive) handle(ctx context.Context, r *rpc.Request) (any, error) {
	t := l.current()
	switch {
	case t == nil && r.Notification:
		return nil, nil // between turns (thread start, a stopped turn's tail)
	case t == nil:
		return nil, &rpc.Error{Code: rpc.CodeMethodNotFound, Message: "no turn is running for " + r.Method}
	case r.Notification:
		t.notification(r.Method, r.Params, r.Raw)
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.ctx, cancel)() // a stopped turn cancels its approvals
	return t.serverRequest(ctx, r)
}

func (l *codexLive) newTurn(ctx context.Context, host Host, req Request) *codexTurn {
	return &codexTurn{
		ctx: ctx, conn: l.conn, host: host, req: req, threadMode: l.mode, threadModel: l.model,
		redact: l.redact, finished: make(chan struct{}), threadID: l.threadID,
		res:     Result{AgentSession: l.threadID},
		started: map[string]bool{}, deltas: map[string]bool{},
	}
}

// Turn starts one turn on the thread and waits for turn/completed. When
// ctx ends, turn/interrupt stops it; codex is killed if the turn has not
// completed within interruptGrace.
func (l *codexLive) Turn(ctx context.Context, req Request, host Host) (Result, error) {
	warm := l.turns > 0 || l.ready != nil
	l.turns++
	if err := awaitHandshake(ctx, l.ready, &l.readyErr); err != nil || !l.Usable() {
		return l.gone(ctx, err)
	}
	ch := &counting{Host: host}
	t := l.newTurn(ctx, ch, req)
	l.setTurn(t, req.TaskID)
	err := t.start()
	if err == nil {
		p, s, _ := codexMode(req.PermissionMode)
		l.mode = p + "/" + s
		if req.Model != "" {
			l.model = req.Model
		}
	}
	if err == nil {
		select {
		case <-t.finished:
		case <-l.conn.Done(): // codex exited; finish says how
		case <-ctx.Done():
			l.interrupt(t)
		}
	}
	l.setTurn(nil, "")
	l.p.ReapStrays()
	if t.isDone() && l.Usable() {
		res := t.finish(nil, nil, "")
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, nil
	}
	waitErr := l.close()
	if warm && ch.silent() && ctx.Err() == nil {
		return Result{}, ErrGone
	}
	if err == nil {
		err = ctx.Err()
	}
	res := t.finish(err, waitErr, l.p.Stderr())
	if res.Status == "completed" {
		return res, nil
	}
	return res, ctx.Err()
}

// gone closes a process that cannot take the turn: stopped while its
// handshake ran (err is ctx's), or gone (ErrGone: the turn runs cold).
func (l *codexLive) gone(ctx context.Context, err error) (Result, error) {
	l.Close()
	if err != nil && ctx.Err() != nil {
		return Result{Status: "failed", Err: &Error{Code: "cancelled", Message: "codex turn stopped: " + context.Cause(ctx).Error()}}, ctx.Err()
	}
	if err != nil {
		return Result{}, err
	}
	return Result{}, ErrGone
}

// interrupt asks codex to stop the turn and waits for its turn/completed,
// killing codex if it does not come within interruptGrace.
func (l *codexLive) interrupt(t *codexTurn) {
	ctx, cancel := context.WithTimeout(context.Background(), interruptGrace)
	defer cancel()
	t.mu.Lock()
	turnID := t.turnID
	t.mu.Unlock()
	if call(ctx, l.conn, "turn/interrupt", map[string]any{"threadId": l.threadID, "turnId": turnID}, nil) == nil {
		select {
		case <-t.finished:
			return
		case <-l.conn.Done():
		case <-ctx.Done():
		}
	}
	l.kill()
}

// Close closes codex's input and waits for it to exit.
func (l *codexLive) Close() { _ = l.close() }

func (l *codexLive) close() error {
	var err error
	l.once.Do(func() {
		l.closed = true
		err = l.p.CloseRPC(l.conn, l.served, codexExitWait, l.kill)
		l.kill()
		if l.ready != nil {
			<-l.ready // the handshake ends with the process
		}
	})
	return err
}

// open initialises the connection and starts or resumes the thread.
func (l *codexLive) open(ctx context.Context, req Request) error {
	if err := call(ctx, l.conn, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "agor", "title": "agor", "version": "1"},
	}, nil); err != nil {
		return err
	}
	if err := l.conn.Notify("initialized", nil); err != nil {
		return err
	}
	thread := map[string]any{"cwd": req.Cwd, "approvalPolicy": l.policy, "sandbox": l.sandbox}
	if req.Model != "" {
		thread["model"] = req.Model
	}
	method := "thread/start"
	if req.Resume != "" {
		method, thread["threadId"] = "thread/resume", req.Resume
	}
	var th struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := call(ctx, l.conn, method, thread, &th); err != nil {
		return err
	}
	if th.Thread.ID == "" {
		return fmt.Errorf("%s: no thread id in its result", method)
	}
	l.threadID, l.model = th.Thread.ID, req.Model
	if method == "thread/start" {
		l.mode = l.policy + "/" + l.sandbox
	}
	return nil
}
