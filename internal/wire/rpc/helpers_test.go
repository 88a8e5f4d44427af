package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testAppCode stands for an application's own error code.
const testAppCode = -32004

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// socketpair returns two connected Unix stream sockets.
func socketpair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conv := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return conv(fds[0]), conv(fds[1])
}

// serve starts Serve on c and closes and waits for it at cleanup.
func serve(t testing.TB, c *Conn) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background()) }()
	t.Cleanup(func() {
		c.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
}

// pair returns two connected, serving Conns.
func pair(t testing.TB, ha, hb Handler, oa, ob Options) (*Conn, *Conn) {
	t.Helper()
	x, y := socketpair(t)
	a, b := NewConn(x, ha, oa), NewConn(y, hb, ob)
	serve(t, a)
	serve(t, b)
	return a, b
}

// wire is a raw peer: it writes lines and reads replies of a served Conn.
type wire struct {
	t  testing.TB
	nc net.Conn
	sc *bufio.Scanner
}

func newWire(t testing.TB, h Handler, o Options) *wire {
	t.Helper()
	x, y := socketpair(t)
	serve(t, NewConn(x, h, o))
	t.Cleanup(func() { y.Close() })
	return &wire{t: t, nc: y, sc: newScanner(y)}
}

func newScanner(nc net.Conn) *bufio.Scanner {
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	return sc
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := w.nc.Write([]byte(line + "\n")); err != nil {
		w.t.Fatal(err)
	}
}

// recv reads one reply line, failing the test after 5 s.
func (w *wire) recv() json.RawMessage {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if !w.sc.Scan() {
		w.t.Fatalf("no reply: %v", w.sc.Err())
	}
	return append(json.RawMessage(nil), w.sc.Bytes()...)
}

func (w *wire) recvMsg() *message {
	w.t.Helper()
	var m message
	raw := w.recv()
	if err := json.Unmarshal(raw, &m); err != nil {
		w.t.Fatalf("reply %s: %v", raw, err)
	}
	return &m
}

// testMux has the methods the tests call.
func testMux() *Mux {
	m := NewMux()
	m.Register("echo", func(_ context.Context, r *Request) (any, error) { return r.Params, nil })
	m.Register("typed", Method(func(_ context.Context, p typedParams) (int, error) { return p.N * 2, nil }))
	m.Register("fail", func(context.Context, *Request) (any, error) { return nil, os.ErrPermission })
	m.Register("missing", func(context.Context, *Request) (any, error) {
		return nil, Errorf(testAppCode, "task_not_found", "task %q not found", "t1")
	})
	m.Register("panic", func(context.Context, *Request) (any, error) { panic("boom") })
	m.Register("block", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return m
}

type typedParams struct {
	N    int    `json:"n"`
	Name string `json:"name"`
}

func (p typedParams) Validate() error {
	if p.N < 0 {
		return InvalidParams("n", "must not be negative")
	}
	return nil
}
