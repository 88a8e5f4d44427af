package dialback

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// A token's marks are its own: a token not yet bound cannot take a job
// another token holds, and one token's connection ending does not clear
// another's "connected" mark.
func TestTokenBoundToItsJob(t *testing.T) {
	jobs, _ := OpenJobs("")
	alice, _ := jobs.Issue("alice", 1001)
	bob, _ := jobs.Issue("bob", 1002)
	if err := jobs.Bind(alice, "41"); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Check(alice, "alice", "41", "n1"); err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Check(bob, "bob", "41", "n1")
	if err == nil {
		jobs.Release(b) // bob's connection ends
	} else if !errors.Is(err, ErrJobTaken) {
		t.Errorf("bob's hello naming alice's job: %v, want %v", err, ErrJobTaken)
	}
	if err == nil {
		t.Error("bob's token took alice's job 41")
	}
	if _, err := jobs.Check(alice, "alice", "41", "n2"); !errors.Is(err, ErrConnected) {
		t.Errorf("a second connection on alice's token after bob's ended: %v, want %v", err, ErrConnected)
	}
}

// Connections that have not said hello are bounded, per remote address
// and in all; past a bound a new one is closed at once, and a slot frees
// when its connection goes.
func TestPendingBounded(t *testing.T) {
	p := newPKI(t)
	jobs, _ := OpenJobs("")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}}, MaxPending: 3, MaxPendingPerRemote: 2, Deliver: func(a Accepted) { a.Conn.Close() }}
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	from := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a1, _ := from("127.0.0.1"), from("127.0.0.1")
	checkCut(t, "a third from one remote", from("127.0.0.1"), true)
	from("127.0.0.2")
	checkCut(t, "a fourth in all", from("127.0.0.3"), true)
	a1.Close()
	time.Sleep(100 * time.Millisecond) // the server sees a1 go
	checkCut(t, "one after a slot freed", from("127.0.0.3"), false)
}

// checkCut says whether the server closed c at once (cut) or holds it.
func checkCut(t *testing.T, name string, c net.Conn, want bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	held := errors.As(err, &ne) && ne.Timeout()
	if held == want {
		t.Errorf("%s: cut %v, want %v (read: %v)", name, !held, want, err)
	}
}

// flaky fails its first Accepts as a process out of descriptors does.
type flaky struct {
	net.Listener
	fails atomic.Int32
}

func (f *flaky) Accept() (net.Conn, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

// An accept error (EMFILE) is waited out, not the end of the listener.
func TestAcceptErrorRetried(t *testing.T) {
	p := newPKI(t)
	jobs, _ := OpenJobs("")
	tok, _ := jobs.Issue("alice", 1001)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flaky{Listener: ln}
	fl.fails.Store(3)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}}, Deliver: func(a Accepted) { a.Conn.Close() }}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, fl) }()
	t.Cleanup(func() { ln.Close(); cancel() })
	c, err := dial(ln.Addr().String(), p, protocol.HelloParams{Token: tok, User: "alice", JobID: "5", PID: 1})
	select {
	case err := <-done:
		t.Fatalf("Serve ended on an accept error: %v", err)
	default:
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
