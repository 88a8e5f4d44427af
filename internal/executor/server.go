// Package executor is the per-user executor: it serves the daemon's
// JSON-RPC connections on a socket systemd hands over (or one made by
// hand), only to peers the policy allows, and exits when idle so that
// systemd can start it again on the next connect. Run is the whole
// program, wired (methods, self-check, umask, egress, dial-back);
// cmd/agor-executor only parses its flags and calls it.
package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Config is what a Server needs besides its listener.
type Config struct {
	Policy      peer.Policy
	IdleTimeout time.Duration // 0: never exit for idleness
	StopTimeout time.Duration // how long in-flight work may finish on SIGTERM
	RPC         rpc.Options
	Logger      *slog.Logger
	Notifier    Notifier // sd_notify; nil means not under systemd
}

// Notifier sends service state to the service manager.
type Notifier interface {
	Notify(state string)
}

// Listener is where connections come from: the Unix socket systemd hands
// over (each peer checked by SO_PEERCRED), or a dial-back to the daemon
// (internal/dialback: proved by TLS and the job's token before Accept
// returns it).
type Listener interface {
	Accept() (net.Conn, error)
	SetDeadline(t time.Time) error
	Close() error
	Addr() net.Addr
}

// Server accepts and serves connections until stopped or idle.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *rpc.Mux
	started time.Time

	mu       sync.Mutex
	ln       Listener
	conns    map[*rpc.Conn]struct{}
	socks    map[*net.UnixConn]struct{} // not (yet) JSON-RPC: see route
	raw      map[string]RawFunc
	holds    int       // work that keeps the executor alive without a connection
	idleFrom time.Time // when conns and holds last reached zero
	stopping bool
	grace    time.Duration // how long drain waits for in-flight work
	stopped  chan struct{} // closed once by Stop
	onStop   []func()      // run once as stopping begins (letGo)
	onForce  []func()      // run once the stop's grace has passed
	letGoOne sync.Once
	wg       sync.WaitGroup
	user     func() string // whom this executor serves, looked up once, for messages
}

// ErrIdle is returned by Serve when the executor stopped for idleness.
var ErrIdle = errors.New("idle")

// NewServer builds a server with the built-in methods registered.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		mux:     rpc.NewMux(),
		started: time.Now(),
		conns:   map[*rpc.Conn]struct{}{},
		socks:   map[*net.UnixConn]struct{}{},
		raw:     map[string]RawFunc{},
		stopped: make(chan struct{}),
		user:    sync.OnceValue(CurrentUser),
	}
	s.registerBuiltins()
	return s
}

// Mux is where further capabilities register their methods.
func (s *Server) Mux() *rpc.Mux { return s.mux }

// Hold marks work (a task, a terminal, a child process) that must keep
// the executor alive even with no connection; call release when it ends.
func (s *Server) Hold() (release func()) {
	s.mu.Lock()
	s.holds++
	s.busyLocked()
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds--
			s.maybeIdleLocked()
			s.mu.Unlock()
		})
	}
}

// Serve accepts on ln until ctx ends, Stop is called, or the executor has
// been idle for IdleTimeout (then it returns ErrIdle). It never unlinks a
// socket it was handed; it waits for every connection before returning.
func (s *Server) Serve(ctx context.Context, ln Listener) error {
	s.mu.Lock()
	s.ln = ln
	if s.stopping { // stopped before it started: Stop could not close ln
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.idleFrom = time.Now()
	s.maybeIdleLocked()
	s.mu.Unlock()
	s.notify("READY=1\nSTATUS=" + s.status())

	stopOnCancel := context.AfterFunc(ctx, func() { s.Stop("context ended") })
	defer stopOnCancel()

	err := s.acceptLoop(ctx, ln)
	s.drain()
	return err
}

func (s *Server) acceptLoop(ctx context.Context, ln Listener) error {
	for {
		c, err := ln.Accept()
		if err == nil {
			s.admit(ctx, c)
			continue
		}
		if s.isStopping() {
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if s.idleExpired() {
				s.log.Info("idle, exiting", "idle_timeout", s.cfg.IdleTimeout.String())
				s.Stop("idle")
				return ErrIdle
			}
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if errors.Is(err, dialback.ErrRefused) {
			return err // the job's token is revoked: this executor is over
		}
		s.log.Warn("accept failed", "err", err)
		time.Sleep(50 * time.Millisecond) // e.g. EMFILE: do not spin
	}
}

// idleExpired is asked only by the accept loop, after its deadline passed:
// since it is the only acceptor, no connection can be half-admitted now,
// and any that arrives later waits in the socket's backlog for the next
// activation.
func (s *Server) idleExpired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.activeLocked() {
		return false
	}
	if left := s.cfg.IdleTimeout - time.Since(s.idleFrom); left > 0 {
		_ = s.ln.SetDeadline(time.Now().Add(left))
		return false
	}
	return true
}

// admit checks the peer and serves the connection: as JSON-RPC, or,
// when raw methods are registered, as its first line says (route).
func (s *Server) admit(ctx context.Context, c net.Conn) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		// Dialled (internal/dialback): the pinned CA and the job's token
		// proved it before Accept returned it. Raw streams need a second
		// connection, which a dialled executor never takes: JSON-RPC only.
		from := "the daemon at " + c.RemoteAddr().String()
		if conn, log := s.register(c, s.log.With("peer", c.RemoteAddr().String()), from); conn != nil {
			go s.serveConn(ctx, conn, log, from)
		}
		return
	}
	cred, err := peer.Of(uc)
	if err == nil {
		err = s.cfg.Policy.Check(cred)
	}
	if err != nil {
		s.log.Warn("refused connection", "peer_uid", cred.UID, "peer_gid", cred.GID, "peer_pid", cred.PID, "err", err)
		_ = c.Close()
		return
	}
	if len(s.raw) > 0 {
		s.route(ctx, uc, cred)
		return
	}
	if conn, log := s.register(uc, credLog(s.log, cred), peerName(cred)); conn != nil {
		go s.serveConn(peer.NewContext(ctx, cred), conn, log, peerName(cred))
	}
}

func credLog(log *slog.Logger, cred peer.Cred) *slog.Logger {
	return log.With("peer_uid", cred.UID, "peer_pid", cred.PID)
}

// peerName says who a connection is from, for the journal's messages.
func peerName(cred peer.Cred) string {
	return fmt.Sprintf("uid %d (pid %d)", cred.UID, cred.PID)
}

// register counts a JSON-RPC connection from (who it is); nil once
// stopping. The returned logger's messages name the peer.
func (s *Server) register(rwc net.Conn, log *slog.Logger, from string) (*rpc.Conn, *slog.Logger) {
	opts := s.cfg.RPC
	opts.Logger = log
	conn := rpc.NewConn(rwc, s.logged(log), opts)
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		_ = rwc.Close()
		return nil, nil
	}
	s.conns[conn] = struct{}{}
	s.busyLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	log.Info("connection from " + from + " accepted: serving " + s.user())
	s.notify("STATUS=" + s.status())
	return conn, log
}

func (s *Server) serveConn(ctx context.Context, conn *rpc.Conn, log *slog.Logger, from string) {
	defer s.wg.Done()
	err := conn.Serve(ctx)
	s.mu.Lock()
	delete(s.conns, conn)
	s.maybeIdleLocked()
	idle := !s.activeLocked()
	s.mu.Unlock()
	if idle {
		// An idle executor waits, perhaps for hours, on many hosts at once:
		// give back what serving took rather than let the scavenger do it
		// over minutes. Rare: the daemon keeps its connection open.
		debug.FreeOSMemory()
	}
	if err != nil {
		log.Info("connection from "+from+" closed: "+err.Error(), "err", err)
	} else {
		log.Info("connection from " + from + " closed")
	}
	s.notify("STATUS=" + s.status())
}

// busyLocked clears the idle deadline: something is using the executor.
func (s *Server) busyLocked() {
	if s.ln != nil {
		_ = s.ln.SetDeadline(time.Time{})
	}
}

// maybeIdleLocked arms the idle deadline once nothing is left.
func (s *Server) maybeIdleLocked() {
	if s.activeLocked() || s.ln == nil || s.cfg.IdleTimeout <= 0 {
		return
	}
	s.idleFrom = time.Now()
	_ = s.ln.SetDeadline(s.idleFrom.Add(s.cfg.IdleTimeout))
}

// activeLocked: a connection or held work keeps the executor busy.
func (s *Server) activeLocked() bool {
	return len(s.conns) > 0 || len(s.socks) > 0 || s.holds > 0
}

// Stop stops accepting; Serve then lets in-flight requests finish for up
// to StopTimeout before closing the connections.
func (s *Server) Stop(reason string) { s.stop(reason, s.cfg.StopTimeout) }

func (s *Server) stop(reason string, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	s.stopping = true
	s.grace = grace
	close(s.stopped)
	s.log.Info("stopping", "reason", reason)
	s.notify("STOPPING=1\nSTATUS=stopping: " + reason)
	if s.ln != nil {
		_ = s.ln.Close() // a handed-over socket is not unlinked: systemd keeps it
	}
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// OnStop runs f when the server stops, before it waits for in-flight
// work: for holds that are no work to finish (idle warm agents), which
// would otherwise keep the stop waiting its whole StopTimeout.
func (s *Server) OnStop(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onStop = append(s.onStop, f)
}

// OnForce runs f when the stop's grace (StopTimeout) has passed, before
// the connections are closed: for work that outlives its connection (a
// task the daemon may take over again), which must end now.
func (s *Server) OnForce(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onForce = append(s.onForce, f)
}

// letGo runs the OnStop funcs, once.
func (s *Server) letGo() {
	s.letGoOne.Do(func() {
		s.mu.Lock()
		onStop := s.onStop
		s.mu.Unlock()
		for _, f := range onStop {
			f()
		}
	})
}

// drain lets go of what OnStop names, waits for in-flight requests (up to
// StopTimeout), then closes every connection and waits for them.
func (s *Server) drain() {
	s.letGo()
	s.mu.Lock()
	grace := s.grace
	s.mu.Unlock()
	if !s.waitInFlight(0, grace) {
		s.mu.Lock()
		force := s.onForce
		s.mu.Unlock()
		for _, f := range force {
			f()
		}
		s.waitHolds(forceWait)
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	for c := range s.socks {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// forceWait bounds the wait for forced work to end (a cancelled task's
// agent is killed, and its result sent).
const forceWait = 5 * time.Second

// waitInFlight waits until at most n requests are in flight, or d passes.
// It reports whether that happened in time.
func (s *Server) waitInFlight(n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.inFlight() > n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// waitHolds waits until no hold is left, or d passes (requests end when
// their connections are closed next).
func (s *Server) waitHolds(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		n := s.holds
		s.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.holds
	for c := range s.conns {
		n += c.InFlight()
	}
	return n
}

func (s *Server) status() string {
	s.mu.Lock()
	conns, holds := len(s.conns), s.holds
	n := 0
	for c := range s.conns {
		n += c.InFlight()
	}
	s.mu.Unlock()
	return fmt.Sprintf("%d connections, %d requests in flight, %d tasks held", conns, n, holds)
}

func (s *Server) notify(state string) {
	if s.cfg.Notifier != nil {
		s.cfg.Notifier.Notify(state)
	}
}

// RunStatus refreshes STATUS= periodically (in-flight counts change
// without any connection event) until ctx ends.
func (s *Server) RunStatus(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopped:
			return
		case <-t.C:
			s.notify("STATUS=" + s.status())
		}
	}
}
