package termcarry

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// unixPair is a connected pair of unix sockets, closed at the test's end.
func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// The executor's status lines during a handoff are its user's word: an
// endless line (or an endless run of lines) must not grow the daemon,
// which stops reading, answers, and lets the handoff go.
func TestEndlessHandoffStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		line []byte // written over and over
	}{
		{"one endless line", bytes.Repeat([]byte("x"), 32<<10)},
		{"endless lines", []byte("{\"ended\":\"\"}\n{}\nnot json\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := unixPair(t)
			raw, exe := unixPair(t)
			var sent atomic.Int64
			const total = 64 << 20
			go func() { // the executor: takes the handoff, then says too much
				oob := make([]byte, 64)
				_, _, _, _, _ = exe.ReadMsgUnix(make([]byte, 16), oob)
				for sent.Load() < total {
					n, err := exe.Write(tc.line)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
				exe.Close()
			}()
			r := &Raw{a: Attach{ID: "t1", Log: slog.New(slog.DiscardHandler)}, conn: raw, rd: bufio.NewReaderSize(raw, 64<<10), Handoff: true}
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = r.HandOver(client, client, bufio.NewReader(bytes.NewReader(nil)))
				raw.Close() // as Raw.Close does once HandOver returns
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("HandOver still reading after 20 s")
			}
			if n := sent.Load(); n >= total {
				t.Fatalf("HandOver read all %d bytes the executor sent before giving up", n)
			} else {
				t.Logf("HandOver gave up after the executor had sent %d bytes", n)
			}
		})
	}
}
