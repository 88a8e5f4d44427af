// Package rpctest connects rpc.Conns for tests: a Unix socketpair, and a
// pair of serving Conns over one that are closed and waited for when the
// test ends.
package rpctest

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Socketpair returns two connected Unix stream sockets (*net.UnixConn),
// closed when the test ends.
func Socketpair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	conv := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		return c
	}
	return conv(fds[0]), conv(fds[1])
}

// Pair returns two connected Conns, each serving its handler (nil: none).
// When the test ends both are closed and their Serve waited for; cleanups
// registered before Pair run after that, so a service behind a handler
// can be closed there once no request reaches it any more.
func Pair(tb testing.TB, ha, hb rpc.Handler, oa, ob rpc.Options) (a, b *rpc.Conn) {
	tb.Helper()
	x, y := Socketpair(tb)
	a, b = rpc.NewConn(x, ha, oa), rpc.NewConn(y, hb, ob)
	Serve(tb, a)
	Serve(tb, b)
	return a, b
}

// Serve runs c.Serve until the test ends, then closes c and waits for it.
func Serve(tb testing.TB, c *rpc.Conn) {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background()) }()
	tb.Cleanup(func() {
		c.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("Serve did not return after Close")
		}
	})
}
