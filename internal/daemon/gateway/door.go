package gateway

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
)

// DoorPrefix starts the line an executor's relay writes first on each
// connection it opens to the gateway's socket, for the task whose
// process holds the agent's end: "AGOR-GATEWAY-TASK CREDENTIAL\n", then
// the agent's bytes untouched. The agent never sees the line, nor the
// credential in it.
const DoorPrefix = "AGOR-GATEWAY-TASK "

// maxDoorLine bounds the line (a credential is about 100 bytes).
const maxDoorLine = 512

// DoorListener wraps ln so that each connection's door line, when it has
// one, is taken off before HTTP reads it. A connection without one is
// served all the same (as one without a credential: refused by the
// Authorizer with Options.Door), so that whoever connects straight to
// the socket is told, and audited, rather than cut off.
func DoorListener(ln net.Listener) net.Listener { return doorListener{ln} }

type doorListener struct{ net.Listener }

func (l doorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &doorConn{Conn: c}, nil
}

// doorConn reads its door line on its first Read (under the HTTP
// server's header deadline), so that Accept never waits for a client.
type doorConn struct {
	net.Conn
	once sync.Once
	cred string // the door line's credential; "" without one
	rest []byte // read past the line: the start of the HTTP request
	err  error
}

// NetConn is the connection underneath (its SO_PEERCRED says who relayed).
func (c *doorConn) NetConn() net.Conn { return c.Conn }

func (c *doorConn) Read(p []byte) (int, error) {
	c.once.Do(c.readLine)
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

var errDoorLine = errors.New("gateway: door line longer than it may be")

// readLine takes the door line off, when the bytes start with one, and
// keeps what came after it (or everything, without one) for Read.
func (c *doorConn) readLine() {
	buf := make([]byte, 0, maxDoorLine)
	prefix := []byte(DoorPrefix)
	for {
		n := min(len(buf), len(prefix))
		if !bytes.Equal(buf[:n], prefix[:n]) {
			c.rest = buf // no door line: HTTP (or garbage) from the first byte
			return
		}
		if i := bytes.IndexByte(buf, '\n'); i >= 0 && n == len(prefix) {
			c.cred = strings.TrimSpace(string(buf[len(prefix):i]))
			c.rest = buf[i+1:]
			return
		}
		if len(buf) == cap(buf) {
			c.err = errDoorLine
			return
		}
		m, err := c.Conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			c.rest, c.err = buf, err
			return
		}
	}
}

type doorKey struct{}

// DoorContext is an http.Server's ConnContext for DoorListener's
// connections: it lets the gateway find the connection's credential.
func DoorContext(ctx context.Context, c net.Conn) context.Context {
	if dc, ok := c.(*doorConn); ok {
		return context.WithValue(ctx, doorKey{}, dc)
	}
	return ctx
}

// doorCredential is the credential r's connection came with, "" when it
// came with none. The server read the request after the door line, on
// the goroutine that calls the handler.
func doorCredential(r *http.Request) string {
	if dc, ok := r.Context().Value(doorKey{}).(*doorConn); ok {
		return dc.cred
	}
	return ""
}
