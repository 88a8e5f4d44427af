package api

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/peer"
)

// Connection limits of the API.
const (
	// IdleTimeout closes a keep-alive connection with no request for this
	// long (an idle client holds no descriptor for ever).
	IdleTimeout = 60 * time.Second
	// BodyReadTimeout closes a connection whose request body makes no
	// progress for this long (a stalled upload). A body that keeps
	// arriving, however slowly, and a long answer (an event stream, a
	// terminal) are not cut.
	BodyReadTimeout = 30 * time.Second
	// DefaultMaxConnsPerUID bounds one local user's open connections to the
	// API socket (root is not counted): past it, 429 at once.
	DefaultMaxConnsPerUID = 64
)

// stallGuard makes each read of a request body wait at most d for data,
// and lifts the deadline once the body is read, so that nothing waiting
// on the connection afterwards (the server's own check that the client
// is still there) times out.
type stallGuard struct {
	io.ReadCloser
	rc *http.ResponseController
	d  time.Duration
}

func (g stallGuard) Read(p []byte) (int, error) {
	_ = g.rc.SetReadDeadline(time.Now().Add(g.d))
	n, err := g.ReadCloser.Read(p)
	if err != nil {
		_ = g.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// guardBody puts the stall guard on r's body (none: nothing to guard).
func guardBody(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = stallGuard{ReadCloser: r.Body, rc: http.NewResponseController(w), d: d}
	}
}

// UIDLimiter is a listener that admits at most Max connections per peer
// uid at once (root exempt); a connection past it is answered 429 and
// closed.
type UIDLimiter struct {
	net.Listener
	Max int
	// credOf names a connection's peer (default peer.Of).
	credOf func(net.Conn) (peer.Cred, error)
	conns  counter[uint32]
}

// Accept returns the next connection within its uid's allowance.
func (l *UIDLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		of := l.credOf
		if of == nil {
			of = peer.Of
		}
		cred, err := of(c)
		if err != nil || cred.UID == 0 {
			return c, nil // no SO_PEERCRED (a test's pipe): nothing to count
		}
		if l.conns.take(cred.UID, l.max()) {
			return &countedConn{Conn: c, cred: cred, release: func() { l.conns.put(cred.UID) }}, nil
		}
		refuseConn(c)
	}
}

func (l *UIDLimiter) max() int {
	if l.Max > 0 {
		return l.Max
	}
	return DefaultMaxConnsPerUID
}

// counter counts what each key holds open, within a bound.
type counter[K comparable] struct {
	mu   sync.Mutex
	open map[K]int
}

// take counts one more for k, unless k holds max already.
func (c *counter[K]) take(k K, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[K]int{}
	}
	if c.open[k] >= max {
		return false
	}
	c.open[k]++
	return true
}

// put gives k's place back.
func (c *counter[K]) put(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[k]--; c.open[k] <= 0 {
		delete(c.open, k)
	}
}

// refuseConn answers one over-limit connection and closes it.
func refuseConn(c net.Conn) {
	const body = `{"error":{"code":-32003,"reason":"too_many_connections","message":"too many open connections from your uid"}}` + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	_ = c.Close()
}

// countedConn gives its uid's place back once, when closed.
type countedConn struct {
	net.Conn
	cred    peer.Cred // as the limiter read it: ConnContext needs no second look
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
