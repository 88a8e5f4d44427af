package egress

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// The daemon goes while the executor's work runs on (an upgrade, a
// restart): a relayed connection must not be what fails the task. Where
// the daemon's socket is not there (systemd removes it while it restarts
// the socket unit, as an upgrade's postinst does) the relay dials again
// until it is, within Relay.Wait. Where a connection ends before anything
// came back on it (it was in the backlog of the socket being closed, or
// the daemon stopped before it read it), nothing was answered: the relay
// dials again and sends what the client had sent (the door line first),
// as the client's own retry would; at most maxRedials times, and only
// while what it keeps to send again fits in maxReplay. Once the daemon
// has answered a byte, nothing is kept and nothing sent twice: an answer
// cut short stays cut (the daemon drains its answers before it stops).

// DefaultWait is how long a connection waits for the daemon's socket to
// come back when Relay.Wait is 0: longer than the daemon takes to drain
// its model requests and start again.
const DefaultWait = 60 * time.Second

const (
	// maxReplay bounds what one connection keeps to send again: a model
	// request's body is read whole by the gateway, and is rarely more.
	maxReplay = 4 << 20
	// maxRedials bounds how often one connection is dialled again.
	maxRedials = 3
	// firstRetry is the first pause between dials; each doubles, to 1 s.
	firstRetry = 50 * time.Millisecond
)

// upstream is one client's connection to the daemon's socket, dialled
// again as above. Write is the client-to-daemon side (one goroutine), Read
// the other (another), which alone redials; the lock orders what is kept
// against a redial.
type upstream struct {
	r        *Relay
	ctx      context.Context
	preamble []byte

	mu       sync.Mutex
	cond     *sync.Cond // on mu: a redial done, an answer, the end
	conn     net.Conn
	gen      int    // redials so far
	sent     []byte // all written to conn, until the daemon answers
	answered bool   // a byte came back: no more redials
	over     bool   // sent outgrew maxReplay: no redials
	halfDone bool   // the client half-closed: each new conn is too
	closed   bool
}

// connect dials the daemon's socket for a new client.
func (r *Relay) connect(ctx context.Context, preamble []byte) (*upstream, error) {
	u := &upstream{r: r, ctx: ctx, preamble: preamble}
	u.cond = sync.NewCond(&u.mu)
	c, err := u.dial()
	if err != nil {
		return nil, err
	}
	u.conn = c
	return u, nil
}

func (r *Relay) wait() time.Duration {
	if r.Wait != 0 {
		return r.Wait
	}
	return DefaultWait
}

// dial connects to the socket and sends the preamble, trying again until
// the wait is over.
func (u *upstream) dial() (net.Conn, error) {
	start := time.Now()
	deadline := start.Add(u.r.wait())
	pause := firstRetry
	for tries := 1; ; tries++ {
		c, err := u.dialOnce()
		if err == nil && tries > 1 {
			u.r.Log.Info("egress relay: the daemon's socket is back", "socket", u.r.Socket,
				"waited_ms", time.Since(start).Milliseconds(), "tries", tries)
		}
		if err == nil || u.ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return c, err
		}
		select {
		case <-time.After(pause):
		case <-u.ctx.Done():
			return nil, u.ctx.Err()
		}
		pause = min(2*pause, time.Second)
	}
}

func (u *upstream) dialOnce() (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(u.ctx, "unix", u.r.Socket)
	if err != nil {
		return nil, err
	}
	if err := writeAll(c, u.preamble); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// writeAll writes b to c within a bound (a daemon that reads nothing).
func writeAll(c net.Conn, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Write(b)
	_ = c.SetWriteDeadline(time.Time{})
	return err
}

// redial replaces the connection, which ended unanswered, by a new one
// sent what the old one was, and reports whether there is one to go on
// with. The lock is held throughout: Write waits.
func (u *upstream) redial(cause error) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	defer u.cond.Broadcast()
	if u.answered || u.over || u.closed || u.gen >= maxRedials || u.ctx.Err() != nil {
		u.closed = true
		return false
	}
	u.r.Log.Info("egress relay: the daemon ended a connection before answering; dialling again", "socket", u.r.Socket,
		"resend_bytes", len(u.sent), "err", fmt.Sprint(cause))
	u.conn.Close()
	c, err := u.dial()
	if err == nil {
		if err = writeAll(c, u.sent); err != nil {
			c.Close()
		}
	}
	u.gen++
	if err != nil {
		u.r.Log.Warn("egress relay: cannot reach the daemon's socket again", "socket", u.r.Socket, "err", err)
		u.closed = true
		return false
	}
	if u.halfDone {
		closeWrite(c)
	}
	u.conn = c
	return true
}

// Write sends p to the daemon, keeping it until the daemon answers. When
// the connection fails under it, Read decides: the daemon answered (the
// error stands) or it went unanswered and p went with the rest to the
// next connection.
func (u *upstream) Write(p []byte) (int, error) {
	u.mu.Lock()
	kept := u.keep(p)
	c, gen := u.conn, u.gen
	u.mu.Unlock()
	n, err := c.Write(p)
	if err == nil || !kept {
		return n, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for u.gen == gen && !u.answered && !u.closed {
		u.cond.Wait()
	}
	if u.gen != gen && !u.closed {
		return len(p), nil
	}
	return n, err
}

// keep adds p to what is sent again, while that may be; the lock is held.
func (u *upstream) keep(p []byte) bool {
	if u.answered || u.over {
		return false
	}
	if len(u.sent)+len(p) > maxReplay {
		u.over, u.sent = true, nil
		return false
	}
	u.sent = append(u.sent, p...)
	return true
}

// Read reads the daemon's answer; its first byte ends redials.
func (u *upstream) Read(p []byte) (int, error) {
	for {
		u.mu.Lock()
		c := u.conn
		u.mu.Unlock()
		n, err := c.Read(p)
		if n > 0 {
			u.mu.Lock()
			u.answered, u.sent = true, nil
			u.cond.Broadcast()
			u.mu.Unlock()
			return n, nil
		}
		if err == nil {
			continue
		}
		if !u.redial(err) {
			return 0, err
		}
	}
}

// CloseWrite passes the client's half-close on, now and to a redialled
// connection.
func (u *upstream) CloseWrite() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.halfDone = true
	closeWrite(u.conn)
	return nil
}

// Close ends the connection for good.
func (u *upstream) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	u.cond.Broadcast()
	return u.conn.Close()
}
