// Package pool keeps the daemon's connections to executors: the first use
// for a user brings the executor up through the backend, connects and
// pings; later uses share the connection; when an executor dies, calls in
// flight on it fail at once as "executor crashed" and the next use
// starts it again.
package pool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Pool is safe for concurrent use.
type Pool struct {
	Backend executorunit.Backend
	// Handler returns what serves the requests of user's executor to the
	// daemon; each connection gets its own, which knows whose it is (the
	// executor key: what routes its terminals' and watches' output back;
	// anything deciding for a person takes the key's account).
	// Everything that arrives on the connection is said by user (who can
	// take the executor's end over: same uid) and may count for user
	// only; its notifications are paced per user (see paced).
	Handler func(user string) rpc.Handler
	Log     *slog.Logger
	Max     int // live connections at most; 0: no limit
	// Timeout bounds start, connect and the first ping (connection_timeout_ms):
	// an executor that dies before serving must not hang its callers.
	Timeout time.Duration
	// IdleClose lets go of a connection unused this long, so that its
	// executor can exit when idle; 0 keeps connections open.
	IdleClose time.Duration
	// Keep says a connection stays open though unused: its executor keeps
	// warm agents that the host's cap may ask back over it (and that keep
	// the executor up anyway). Called with the pool's lock held.
	Keep func(user string) bool
	// NotifyRate and NotifyBurst pace each user's notifications (zero:
	// DefaultNotifyRate, DefaultNotifyBurst; rate.Inf: unpaced).
	NotifyRate  rate.Limit
	NotifyBurst int

	mu      sync.Mutex
	conns   map[string]*entry
	sockets map[string]string        // user → executor socket, for DialRaw
	pacers  map[string]*rate.Limiter // user → notification allowance
	wg      sync.WaitGroup           // one watcher per connection, ended by Close
}

type entry struct {
	ready  chan struct{} // closed once client or err is set
	client *rpc.Client
	err    error
	ping   protocol.PingResult
	busy   int       // calls in flight through Call; guarded by Pool.mu
	used   time.Time // last Get or Call; guarded by Pool.mu
}

// Keys: every user parameter of the pool is an executor key (envdef.Key):
// the account alone for the host, ACCOUNT:ENV for her executor in
// environment ENV. One person's executors in several environments are
// separate entries, run side by side, and are let go when idle each.

// accountOf is whose executor a key names.
func accountOf(key string) string {
	a, _ := envdef.SplitKey(key)
	return a
}

// Get returns a live connection to user's executor, starting it if need be.
func (p *Pool) Get(ctx context.Context, user string) (*rpc.Client, protocol.PingResult, error) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns = map[string]*entry{}
	}
	e := p.conns[user]
	if e != nil && e.live() {
		e.used = time.Now()
		p.mu.Unlock()
		<-e.ready
		return e.client, e.ping, e.err
	}
	if e == nil && p.Max > 0 && len(p.conns) >= p.Max {
		p.mu.Unlock()
		return nil, protocol.PingResult{}, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyExecutors,
			"max_executors (%d) live executors already; stop one or raise the limit", p.Max)
	}
	e = &entry{ready: make(chan struct{}), used: time.Now()}
	p.conns[user] = e
	p.mu.Unlock()

	e.client, e.ping, e.err = p.connect(ctx, user)
	close(e.ready)
	if e.err != nil {
		p.drop(user, e)
		return nil, protocol.PingResult{}, e.err
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); <-e.client.Done(); p.drop(user, e) }()
	return e.client, e.ping, nil
}

// live: still connecting, or connected and open.
func (e *entry) live() bool {
	select {
	case <-e.ready:
		return e.err == nil && e.client != nil && e.client.Err() == nil
	default:
		return true
	}
}

// connected: done connecting, successfully.
func (e *entry) connected() bool {
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false
	}
}

func (p *Pool) drop(user string, e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[user] == e {
		delete(p.conns, user)
	}
}

func (p *Pool) connect(ctx context.Context, user string) (*rpc.Client, protocol.PingResult, error) {
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Timeout)
		defer cancel()
	}
	ex, err := p.Backend.Ensure(ctx, user)
	if err != nil {
		return nil, protocol.PingResult{}, lifecycle.Unavailable(err)
	}
	p.setSocket(user, ex.Socket)
	var h rpc.Handler
	if p.Handler != nil {
		// An executor in an environment is still its account's: it speaks
		// for that person only, under her one notification allowance.
		h = p.paced(accountOf(user), p.Handler(user))
	}
	c, err := dial(ctx, ex, h, rpc.Options{Logger: p.log().With("user", user)})
	if err != nil {
		return nil, protocol.PingResult{}, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonConnectFailed, "executor of %s: %v", user, err)
	}
	var ping protocol.PingResult
	if err := c.Call(ctx, protocol.MethodPing, protocol.PingParams{Protocol: protocol.Revision}, &ping); err != nil {
		c.Close()
		return nil, protocol.PingResult{}, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonPingFailed, "executor of %s: %v", user, err)
	}
	if ping.User != ex.User && ping.UID != ex.UID {
		p.log().Warn("executor runs as another user (direct backend, daemon not root)", "user", user, "executor_user", ping.User)
	}
	return c, ping, nil
}

// dial connects to the executor's socket, or waits for it to dial back.
func dial(ctx context.Context, ex executorunit.Executor, h rpc.Handler, opts rpc.Options) (*rpc.Client, error) {
	if ex.Dial == nil {
		return rpc.Dial(ctx, ex.Socket, h, opts)
	}
	nc, err := ex.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return rpc.NewClient(nc, h, opts), nil
}

// Call runs method on user's executor. A connection that ends under the
// call is reported as the executor crashing.
func (p *Pool) Call(ctx context.Context, user, method string, params, result any) error {
	c, _, err := p.Get(ctx, user)
	if err != nil {
		return err
	}
	err = p.call(ctx, user, c, method, params, result)
	if shuttingDown(err) {
		// The executor is on its way out (stopped, idle, its job ending):
		// let it go and ask a new one, once.
		p.forget(user, c)
		if c, _, err = p.Get(ctx, user); err != nil {
			return err
		}
		err = p.call(ctx, user, c, method, params, result)
	}
	return err
}

func (p *Pool) call(ctx context.Context, user string, c *rpc.Client, method string, params, result any) error {
	defer p.hold(user, c)()
	err := c.Call(ctx, method, params, result)
	if errors.Is(err, rpc.ErrClosed) {
		return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonExecutorCrashed, "executor of %s ended during %s: %v", user, method, err)
	}
	return err
}

func shuttingDown(err error) bool {
	var e *rpc.Error
	return errors.As(err, &e) && e.Code == protocol.CodeExecutorUnavailable && e.Reason() == protocol.ReasonShuttingDown
}

// forget drops c as user's connection (if it still is) and closes it.
func (p *Pool) forget(user string, c *rpc.Client) {
	p.mu.Lock()
	if e := p.conns[user]; e != nil && e.client == c {
		delete(p.conns, user)
	}
	p.mu.Unlock()
	go c.Close()
}

// Shutdown asks user's executor to shut down over the open connection,
// if there is one; it never starts an executor.
func (p *Pool) Shutdown(ctx context.Context, user, reason string) error {
	p.mu.Lock()
	e := p.conns[user]
	p.mu.Unlock()
	if e == nil || !e.connected() || e.client.Err() != nil {
		return errors.New("no connection to " + user + "'s executor")
	}
	return e.client.Call(ctx, protocol.MethodShutdown, protocol.ShutdownParams{Reason: reason, TimeoutMS: 10_000}, nil)
}

// ForgetDead closes user's connection when its executor process is gone,
// failing the calls in flight on it at once. The backend saw an executor
// end; the connection may already be to the next one, which is kept.
func (p *Pool) ForgetDead(user string) {
	p.mu.Lock()
	e := p.conns[user]
	if e == nil || !e.connected() || p.Backend.Alive(user, e.ping.PID) {
		p.mu.Unlock()
		return
	}
	delete(p.conns, user)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-e.ready
		if e.client != nil {
			e.client.Close()
		}
	}()
}

// Acquire returns user's connection marked busy until release is called,
// for long-lived use (an attached terminal) that Reap must not cut.
func (p *Pool) Acquire(ctx context.Context, user string) (*rpc.Client, func(), error) {
	c, _, err := p.Get(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	return c, p.hold(user, c), nil
}

// hold marks user's connection busy until the returned func is called, so
// Reap leaves it open.
func (p *Pool) hold(user string, c *rpc.Client) func() {
	p.mu.Lock()
	e := p.conns[user]
	if e == nil || e.client != c {
		p.mu.Unlock()
		return func() {}
	}
	e.busy++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		e.busy--
		e.used = time.Now()
		p.mu.Unlock()
	}
}

// Reap closes connections idle for IdleClose until ctx ends.
func (p *Pool) Reap(ctx context.Context) {
	if p.IdleClose <= 0 {
		return
	}
	t := time.NewTicker(max(p.IdleClose/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, c := range p.idle(time.Now().Add(-p.IdleClose)) {
				c.Close()
			}
		}
	}
}

// idle takes out the connections unused since before.
func (p *Pool) idle(before time.Time) []*rpc.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*rpc.Client
	for user, e := range p.conns {
		if e.connected() && e.busy == 0 && e.used.Before(before) && (p.Keep == nil || !p.Keep(accountOf(user))) {
			delete(p.conns, user)
			out = append(out, e.client)
		}
	}
	return out
}

// Live lists users with an open connection.
func (p *Pool) Live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.conns))
	for u := range p.conns {
		out = append(out, u)
	}
	return out
}

// LiveOf lists the keys of account's connected executors: on the host
// and in every environment (a question about her processes asks each).
func (p *Pool) LiveOf(account string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k, e := range p.conns {
		if accountOf(k) == account && e.connected() {
			out = append(out, k)
		}
	}
	return out
}

// PID is the process id of user's connected executor, as its first ping
// said; false when none is connected.
func (p *Pool) PID(user string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.conns[user]
	if e == nil || !e.connected() {
		return 0, false
	}
	return e.ping.PID, true
}

// Close ends every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	es := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, e := range es {
		<-e.ready
		if e.client != nil {
			e.client.Close()
		}
	}
	p.wg.Wait()
}

func (p *Pool) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}
