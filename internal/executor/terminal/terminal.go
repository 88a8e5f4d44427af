// Package terminal serves the executor's PTY terminals: a login shell of
// the executor's user on a pseudo-terminal, its output streamed as
// ordered terminal_output notifications to the connection attached to
// it, kept running across a lost connection so another can reattach.
package terminal

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ChunkSize bounds one terminal_output's data.
const ChunkSize = 32 << 10

// Defaults for Config's zero fields.
const (
	DefaultMaxTerminals = 32
	DefaultKillGrace    = 2 * time.Second
	DefaultDetachGrace  = 5 * time.Minute
	DefaultScrollback   = 64 << 10
)

// Holder keeps the executor alive while a terminal runs (executor.Server).
type Holder interface {
	Hold() (release func())
}

// Config says where terminals start and how many may run.
type Config struct {
	Root         *fsroot.Root  // cwd resolves beneath it
	Hold         Holder        // optional
	MaxTerminals int           // live terminals at once (default 32)
	KillGrace    time.Duration // SIGHUP to SIGKILL (default 2 s)
	DetachGrace  time.Duration // how long a terminal outlives its connection unattached (default 5 min)
	Scrollback   int           // bytes of recent output kept for reattaching (default 64 KiB)
	Logger       *slog.Logger  // default slog.Default()
	// Sandbox confines shells that ask for it (nil: only "off").
	Sandbox *sandbox.Policy
}

func (c *Config) setDefaults() {
	if c.MaxTerminals <= 0 {
		c.MaxTerminals = DefaultMaxTerminals
	}
	if c.KillGrace <= 0 {
		c.KillGrace = DefaultKillGrace
	}
	if c.DetachGrace <= 0 {
		c.DetachGrace = DefaultDetachGrace
	}
	if c.Scrollback <= 0 {
		c.Scrollback = DefaultScrollback
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Service owns the executor's terminals.
type Service struct {
	cfg  Config
	acct account

	mu     sync.Mutex
	terms  map[string]*term
	closed bool
	wg     sync.WaitGroup // one per terminal, until it is gone
}

// New returns a Service with cfg's zero fields set to the defaults.
func New(cfg Config) *Service {
	cfg.setDefaults()
	return &Service{cfg: cfg, acct: currentAccount(), terms: map[string]*term{}}
}

// Register adds the terminal methods to m.
func (s *Service) Register(m *rpc.Mux) {
	m.Register(protocol.MethodSpawnTerminal, withConn(s.spawn))
	m.Register(protocol.MethodAttachTerminal, withConn(s.attach))
	m.Register(protocol.MethodResizeTerminal, rpc.Method(s.resize))
	m.Register(protocol.MethodTerminateTerminal, rpc.Method(s.terminate))
	m.Register(protocol.MethodListTerminals, rpc.Method(s.list))
	m.Register(protocol.MethodTerminalInput, s.input)
	m.Register(protocol.MethodAttachTerminalRaw, rpc.HandlerFunc(rawElsewhere))
}

// rawElsewhere answers attach_terminal_raw sent on a JSON-RPC connection:
// it is served only as a fresh connection's first request (ServeRaw).
func rawElsewhere(context.Context, *rpc.Request) (any, error) {
	return nil, rpc.InvalidParams("method", "attach_terminal_raw must be the first request of its own connection")
}

// Close terminates every terminal and waits until they are gone (at most
// about KillGrace). Later spawns are refused.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	all := make([]*term, 0, len(s.terms))
	for _, t := range s.terms {
		if t != nil { // nil: still starting; spawn sees closed
			all = append(all, t)
		}
	}
	s.mu.Unlock()
	for _, t := range all {
		t.terminate()
	}
	s.wg.Wait()
}

// lookup finds a live terminal or answers not_found.
func (s *Service) lookup(id string) (*term, error) {
	s.mu.Lock()
	t := s.terms[id]
	s.mu.Unlock()
	if t == nil {
		return nil, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no terminal %q", id)
	}
	return t, nil
}

// reserve takes a slot under the limit for a new terminal.
func (s *Service) reserve() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "", rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonShuttingDown, "the executor is shutting down")
	case len(s.terms) >= s.cfg.MaxTerminals:
		return "", rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyTerminals, "too many terminals (limit %d)", s.cfg.MaxTerminals)
	}
	id := newID()
	s.terms[id] = nil // placeholder: counts against the limit while starting
	s.wg.Add(1)
	return id, nil
}

func (s *Service) unreserve(id string) {
	s.unlist(id)
	s.wg.Done()
}

// unlist forgets a terminal: its id is not found any more and its slot
// is free, though its goroutines may still be finishing.
func (s *Service) unlist(id string) {
	s.mu.Lock()
	delete(s.terms, id)
	s.mu.Unlock()
}

func (s *Service) spawn(ctx context.Context, conn *rpc.Conn, p protocol.SpawnTerminalParams) (protocol.SpawnTerminalResult, error) {
	if err := checkEnv(p.Env); err != nil {
		return protocol.SpawnTerminalResult{}, err
	}
	id, err := s.reserve()
	if err != nil {
		return protocol.SpawnTerminalResult{}, err
	}
	t, err := s.start(id, p)
	if err != nil {
		s.unreserve(id)
		return protocol.SpawnTerminalResult{}, err
	}
	s.mu.Lock()
	s.terms[id] = t
	closing := s.closed
	s.mu.Unlock()
	if _, err := t.attachTo(ctx, conn); err != nil {
		return protocol.SpawnTerminalResult{}, err
	}
	t.run(s.cfg.Hold, func() { s.unlist(id) }, s.wg.Done)
	if closing { // Close ran while this one started
		t.terminate()
	}
	res := protocol.SpawnTerminalResult{TerminalID: id, PID: t.cmd.Process.Pid}
	if t.sandbox.Level != string(sandbox.Off) {
		res.Sandbox = &t.sandbox
	}
	return res, nil
}

func (s *Service) attach(ctx context.Context, conn *rpc.Conn, p protocol.TerminalIDParams) (protocol.AttachTerminalResult, error) {
	t, err := s.lookup(p.TerminalID)
	if err != nil {
		return protocol.AttachTerminalResult{}, err
	}
	return t.attachTo(ctx, conn)
}

func (s *Service) resize(_ context.Context, p protocol.ResizeTerminalParams) (struct{}, error) {
	t, err := s.lookup(p.TerminalID)
	if err != nil {
		return struct{}{}, err
	}
	if err := t.control(rawframe.Control{Cols: p.Cols, Rows: p.Rows}); err != nil {
		if _, ok := err.(*rpc.Error); ok {
			return struct{}{}, err
		}
		return struct{}{}, rpc.Errorf(rpc.CodeInternalError, "resize_failed", "resize: %v", err)
	}
	return struct{}{}, nil
}

func (s *Service) terminate(_ context.Context, p protocol.TerminalIDParams) (protocol.TerminateTerminalResult, error) {
	t, err := s.lookup(p.TerminalID)
	if err != nil {
		return protocol.TerminateTerminalResult{}, err
	}
	_ = t.control(rawframe.Control{Terminate: true})
	return protocol.TerminateTerminalResult{Terminated: true}, nil
}

func (s *Service) list(context.Context, struct{}) (protocol.ListTerminalsResult, error) {
	s.mu.Lock()
	all := make([]*term, 0, len(s.terms))
	for _, t := range s.terms {
		if t != nil {
			all = append(all, t)
		}
	}
	s.mu.Unlock()
	res := protocol.ListTerminalsResult{Terminals: make([]protocol.TerminalInfo, 0, len(all))}
	for _, t := range all {
		res.Terminals = append(res.Terminals, t.info())
	}
	return res, nil
}

// input hands keystrokes to the terminal's writer; it waits only when
// the program has left a full queue of input unread.
func (s *Service) input(_ context.Context, r *rpc.Request) (any, error) {
	var p protocol.TerminalInputParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	t, err := s.lookup(p.TerminalID)
	if err != nil {
		return nil, err
	}
	t.input(p.Data)
	return nil, nil
}

// withConn adapts a typed method that needs the connection it came on.
func withConn[P, R any](f func(context.Context, *rpc.Conn, P) (R, error)) rpc.HandlerFunc {
	return func(ctx context.Context, r *rpc.Request) (any, error) {
		var p P
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		return f(ctx, r.Conn, p)
	}
}

func newID() string { return "term_" + randid.New(12) }

// environ is the executor's environment (a variable for tests).
var environ = os.Environ
