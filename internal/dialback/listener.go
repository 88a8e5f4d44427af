package dialback

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// Listener turns dialling into accepting, so that the executor serves a
// dialled connection as it serves one a socket hands it: Accept dials the
// daemon once the previous connection has closed, and again, with backoff,
// while the daemon cannot be reached (it restarts, the link drops). A
// refused hello is final: the job's token was revoked.
type Listener struct {
	Dialer *Dialer

	mu       sync.Mutex
	deadline time.Time
	live     chan struct{} // closed when the outstanding connection closes
	closed   chan struct{}
	once     sync.Once
}

// Backoff between failed dials.
const (
	firstRetry = 100 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// NewListener is a Listener for d.
func NewListener(d *Dialer) *Listener {
	return &Listener{Dialer: d, closed: make(chan struct{})}
}

// Accept returns the next connection to the daemon. It returns an
// os.ErrDeadlineExceeded net.Error once the deadline passes while it waits
// (the executor's idle timer), ErrRefused, or net.ErrClosed after Close.
func (l *Listener) Accept() (net.Conn, error) {
	if err := l.waitOutstanding(); err != nil {
		return nil, err
	}
	wait := firstRetry
	for {
		ctx, cancel := l.dialContext()
		c, err := l.Dialer.Dial(ctx)
		cancel()
		if err == nil {
			return l.track(c), nil
		}
		if errors.Is(err, ErrRefused) {
			return nil, err
		}
		select {
		case <-l.closed:
			return nil, net.ErrClosed
		case <-time.After(wait):
		}
		if l.expired() {
			return nil, timeout{}
		}
		wait = min(2*wait, maxRetry)
	}
}

// waitOutstanding blocks while a connection is open: one at a time.
func (l *Listener) waitOutstanding() error {
	l.mu.Lock()
	live, dl := l.live, l.deadline
	l.mu.Unlock()
	if live == nil {
		return nil
	}
	var expire <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-live:
		return nil
	case <-l.closed:
		return net.ErrClosed
	case <-expire:
		return timeout{}
	}
}

// dialContext bounds one dial by the hello's timeout and by Close.
func (l *Listener) dialContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), helloTimeout)
	go func() {
		select {
		case <-l.closed:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

func (l *Listener) expired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.deadline.IsZero() && time.Now().After(l.deadline)
}

func (l *Listener) track(c net.Conn) net.Conn {
	live := make(chan struct{})
	l.mu.Lock()
	l.live = live
	l.mu.Unlock()
	return &trackedConn{Conn: c, done: func() {
		l.mu.Lock()
		if l.live == live {
			l.live = nil
		}
		l.mu.Unlock()
		close(live)
	}}
}

// SetDeadline bounds the wait of Accept (zero: none), as a socket's does.
func (l *Listener) SetDeadline(t time.Time) error {
	l.mu.Lock()
	l.deadline = t
	l.mu.Unlock()
	return nil
}

// Close makes Accept return net.ErrClosed.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is the daemon's address.
func (l *Listener) Addr() net.Addr { return dialAddr(l.Dialer.Addr) }

type dialAddr string

func (a dialAddr) Network() string { return "tcp+tls" }
func (a dialAddr) String() string  { return string(a) }

type timeout struct{}

func (timeout) Error() string   { return os.ErrDeadlineExceeded.Error() }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }
func (timeout) Unwrap() error   { return os.ErrDeadlineExceeded }

type trackedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}
