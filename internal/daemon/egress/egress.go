// Package egress is the daemon's egress service: the only way out of an
// executor whose person is under network mode proxy (its unit has
// PrivateNetwork=yes). The executor relays its loopback proxy's
// connections here over a Unix socket; this service knows the person by
// SO_PEERCRED, checks each destination against their allow and deny
// lists (resolving names itself, and checking every address a name
// resolves to), connects out, relays bytes and audits every connection.
//
// It speaks the HTTP proxy protocol: CONNECT host:port for tunnels (TLS
// passes through untouched) and absolute-form requests for plain HTTP,
// each request checked on its own.
package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/netpolicy"
	"github.com/agor-sh/agor/internal/peer"
)

// Person is who is behind a connection, with their effective network set.
type Person struct {
	Name string
	UID  uint32
	Set  config.NetworkSet
}

// Auditor records one egress record (audit.Logger does).
type Auditor interface{ Log(audit.Record) }

// Service serves the egress socket. Person, Audit and Log are required.
type Service struct {
	// Person names the account of uid and its network set now; an error
	// refuses the connection (unknown uid, not a person agor serves).
	Person func(ctx context.Context, uid uint32) (Person, error)
	Audit  Auditor
	Log    *slog.Logger
	// MaxPerUser bounds one uid's connections at once (default 64).
	MaxPerUser int
	// ConnectTimeout bounds resolving and connecting out (default 10 s).
	ConnectTimeout time.Duration
	// Resolve and Dial default to the system's resolver and a net.Dialer.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// TaskOf names the task running in the person's session now ("" when
	// none, or the session is not theirs); nil: records name no task.
	TaskOf func(ctx context.Context, p Person, session string) string
	// credOf names a connection's peer (default peer.Of); tests set it.
	credOf func(net.Conn) (peer.Cred, error)

	mu     sync.Mutex
	open   map[uint32]int
	totals map[string]*counts
}

type counts struct{ up, down, allowed, denied atomic.Int64 }

// Totals is what one person's connections moved since the daemon started.
type Totals struct {
	BytesUp, BytesDown int64 // to destinations, from them
	Allowed, Denied    int64 // connections and requests
}

// Totals reports every person's totals.
func (s *Service) Totals() map[string]Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Totals, len(s.totals))
	for name, c := range s.totals {
		out[name] = Totals{BytesUp: c.up.Load(), BytesDown: c.down.Load(), Allowed: c.allowed.Load(), Denied: c.denied.Load()}
	}
	return out
}

func (s *Service) countsOf(name string) *counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.totals == nil {
		s.totals = map[string]*counts{}
	}
	c := s.totals[name]
	if c == nil {
		c = &counts{}
		s.totals[name] = c
	}
	return c
}

// MaxHeaderBytes bounds a request's head; a proxy request needs little.
const MaxHeaderBytes = 16 << 10

// Serve serves ln until ctx ends; then it closes every tunnel.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	tunnels := &tunnelSet{}
	srv := &http.Server{
		Handler:           &handler{s: s, tunnels: tunnels},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*personConn); ok {
				return context.WithValue(ctx, personKey{}, pc.person)
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(s.Log.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(&listener{Listener: ln, s: s, ctx: ctx}) }()
	select {
	case err := <-done:
		tunnels.closeAll()
		return fmt.Errorf("egress: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	tunnels.closeAll()
	<-done
	return nil
}

type personKey struct{}

// listener admits a connection once its peer is a known person within
// their connection bound; others get an answer saying why and are closed.
type listener struct {
	net.Listener
	s   *Service
	ctx context.Context
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if pc, ok := l.s.admit(l.ctx, c); ok {
			return pc, nil
		}
	}
}

func (s *Service) admit(ctx context.Context, c net.Conn) (net.Conn, bool) {
	of := s.credOf
	if of == nil {
		of = peer.Of
	}
	cred, err := of(c)
	if err != nil {
		refuse(c, http.StatusForbidden, "no peer credentials: "+err.Error())
		return nil, false
	}
	lookup, cancel := context.WithTimeout(ctx, 5*time.Second)
	p, err := s.Person(lookup, cred.UID)
	cancel()
	if err != nil {
		s.Log.Warn("egress refused a connection", "uid", cred.UID, "err", err)
		refuse(c, http.StatusForbidden, err.Error())
		return nil, false
	}
	if !s.take(cred.UID) {
		s.Audit.Log(audit.Record{Action: audit.Egress, User: p.Name, UID: audit.UIDOf(p.UID), Decision: "denied",
			Reason: "too many connections (network.max_connections_per_user " + strconv.Itoa(s.max()) + ")"})
		refuse(c, http.StatusTooManyRequests, "too many egress connections at once (network.max_connections_per_user)")
		return nil, false
	}
	return &personConn{Conn: c, person: p, release: func() { s.put(cred.UID) }}, true
}

func (s *Service) max() int {
	if s.MaxPerUser > 0 {
		return s.MaxPerUser
	}
	return 64
}

func (s *Service) take(uid uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[uint32]int{}
	}
	if s.open[uid] >= s.max() {
		return false
	}
	s.open[uid]++
	return true
}

func (s *Service) put(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[uid]--; s.open[uid] <= 0 {
		delete(s.open, uid)
	}
}

// Open reports uid's connections now (tests and metrics).
func (s *Service) Open(uid uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[uid]
}

// personConn carries its person and gives its place back once, when closed.
type personConn struct {
	net.Conn
	person  Person
	once    sync.Once
	release func()
}

func (c *personConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// refuse answers a connection that is not served, and closes it.
func refuse(c net.Conn, status int, msg string) {
	body := "agor egress: " + msg + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	_ = c.Close()
}

// target is a destination decided: where to connect, or why not.
type target struct {
	dst     netpolicy.Destination
	addr    netip.Addr // the address connected to
	allowed bool
	rule    string
}

// decide resolves dst (a name only when the policy lists it) and picks
// the first address the policy allows; a refusal names the first rule
// that refused. An error is a failure to resolve, not a decision.
func (s *Service) decide(ctx context.Context, p Person, dst netpolicy.Destination) (target, error) {
	t := target{dst: dst}
	if p.Set.Mode == config.NetworkNone {
		t.rule = "mode none"
		return t, nil
	}
	open := p.Set.Mode == config.NetworkOpen // they reach everything anyway; counted only
	pol := p.Set.Policy()
	addrs, err := s.addresses(ctx, pol, dst, open)
	if errors.Is(err, errUnlisted) {
		t.rule = err.Error()
		return t, nil
	}
	if err != nil {
		return t, err
	}
	addrs, never := dialable(addrs)
	if len(addrs) == 0 {
		t.addr, t.rule = never.addr, never.rule
		return t, nil
	}
	if open {
		t.addr, t.allowed, t.rule = addrs[0], true, "mode open"
		return t, nil
	}
	for _, a := range addrs {
		d := pol.Decide(dst, a)
		if d.Allowed {
			t.addr, t.allowed, t.rule = a, true, d.Rule
			return t, nil
		}
		if t.rule == "" {
			t.addr, t.rule = a, d.Rule
		}
	}
	return t, nil
}

var errUnlisted = errors.New("not listed")

// refusedAddr is the first address the daemon refused to dial, and why.
type refusedAddr struct {
	addr netip.Addr
	rule string
}

// dialable keeps the addresses the daemon may dial for anyone, whatever
// their mode or lists: never loopback (its own API, other local
// services, as user agor), link-local or metadata (a cloud's instance
// credentials), unspecified or multicast.
func dialable(addrs []netip.Addr) ([]netip.Addr, refusedAddr) {
	var out []netip.Addr
	var first refusedAddr
	for _, a := range addrs {
		if kind := netpolicy.Special(a); kind != "" {
			if !first.addr.IsValid() {
				first = refusedAddr{a, "builtin " + kind + " (never dialled by the daemon)"}
			}
			continue
		}
		out = append(out, a)
	}
	return out, first
}

// addresses are dst's: the literal, or the name resolved when the policy
// lets it be (always, for open).
func (s *Service) addresses(ctx context.Context, pol netpolicy.Policy, dst netpolicy.Destination, open bool) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(dst.Host); err == nil {
		if a.Zone() != "" {
			return nil, fmt.Errorf("%w: an address with a zone", errUnlisted)
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	if _, err := netpolicy.CleanName(dst.Host); err != nil {
		return nil, fmt.Errorf("%w: %v", errUnlisted, err)
	}
	if !open && !pol.Resolvable(dst) {
		return nil, errUnlisted
	}
	return netpolicy.Lookup(ctx, s.Resolve, dst.Host, s.timeout())
}

func (s *Service) timeout() time.Duration {
	if s.ConnectTimeout > 0 {
		return s.ConnectTimeout
	}
	return 10 * time.Second
}

// dial connects to t's address.
func (s *Service) dial(ctx context.Context, t target) (net.Conn, error) {
	dial := s.Dial
	if dial == nil {
		d := &net.Dialer{}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	return dial(ctx, "tcp", netip.AddrPortFrom(t.addr, t.dst.Port).String())
}

// label is the session and task a connection is recorded under.
type label struct{ session, task string }

func (s *Service) labelOf(ctx context.Context, p Person, session string) label {
	if session == "" || s.TaskOf == nil {
		return label{}
	}
	task := s.TaskOf(ctx, p, session)
	if task == "" {
		return label{}
	}
	return label{session: session, task: task}
}

// record audits one connection or request and counts it for its person.
func (s *Service) record(p Person, l label, t target, up, down int64, failure error) {
	decision := "denied"
	if t.allowed {
		decision = "allowed"
	}
	reason := t.rule
	if failure != nil && t.allowed {
		decision, reason = "failed", failure.Error()
	}
	r := audit.Record{Action: audit.Egress, User: p.Name, UID: audit.UIDOf(p.UID), Session: l.session, Task: l.task, Host: t.dst.Host,
		Port: int(t.dst.Port), Decision: decision, Reason: reason, BytesUp: up, BytesDown: down}
	if t.addr.IsValid() {
		r.Address = t.addr.String()
	}
	s.Audit.Log(r)
	c := s.countsOf(p.Name) // bytes were counted as they went (countingConn)
	if t.allowed {
		c.allowed.Add(1)
	} else {
		c.denied.Add(1)
	}
}
