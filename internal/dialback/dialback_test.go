package dialback

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/dialback/dialbacktest"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

type pki = dialbacktest.PKI

func newPKI(t *testing.T) pki { return dialbacktest.New(t) }

// serve starts a Server on loopback whose delivered connections echo.
func serve(t *testing.T, jobs *Jobs, p pki) (addr string, got chan Accepted) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got = make(chan Accepted, 4)
	s := &Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}}, Deliver: func(a Accepted) {
		got <- a
		go func() { io.Copy(a.Conn, a.Conn); a.Conn.Close(); jobs.Release(a.Job) }()
	}}
	go s.Serve(ctx, ln)
	return ln.Addr().String(), got
}

func dial(addr string, p pki, h protocol.HelloParams) (net.Conn, error) {
	d := &Dialer{Addr: addr, CA: p.Pool, Hello: h}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return d.Dial(ctx)
}

func TestDialBack(t *testing.T) {
	p := newPKI(t)
	path := filepath.Join(t.TempDir(), "jobs.json")
	jobs, err := OpenJobs(path)
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := jobs.Issue("alice", 1001)
	bob, _ := jobs.Issue("bob", 1002)
	if err := jobs.Bind(alice, "41"); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Bind(bob, "42"); err != nil {
		t.Fatal(err)
	}
	addr, got := serve(t, jobs, p)

	c, err := dial(addr, p, protocol.HelloParams{Token: alice, User: "alice", JobID: "41", Node: "node1"})
	if err != nil {
		t.Fatalf("alice's job: %v", err)
	}
	a := <-got
	if a.Job.User != "alice" || a.Job.UID != 1001 || a.Job.Node != "node1" {
		t.Errorf("delivered %+v", a.Job)
	}
	// The connection carries bytes both ways after the hello.
	if _, err := c.Write([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "ping") {
		t.Fatalf("echo: %q %v", line, err)
	}

	refused := map[string]protocol.HelloParams{
		"a forged token":                   {Token: strings.Repeat("A", 43), User: "alice", JobID: "41"},
		"a second connection of the job":   {Token: alice, User: "alice", JobID: "41"},
		"bob's token claiming to be alice": {Token: bob, User: "alice", JobID: "41"},
		"bob's token for alice's job":      {Token: bob, User: "bob", JobID: "41"},
	}
	for name, h := range refused {
		if _, err := dial(addr, p, h); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}

	// A dropped link (or a restarted daemon) is dialled again.
	c.Close()
	waitReleased(t, jobs, "41")
	reopened, err := OpenJobs(path) // what a restarted daemon finds
	if err != nil || len(reopened.List()) != 2 {
		t.Fatalf("reopened registry: %v %v", reopened.List(), err)
	}
	c2, err := dial(addr, p, protocol.HelloParams{Token: alice, User: "alice", JobID: "41"})
	if err != nil {
		t.Fatalf("redial: %v", err)
	}
	<-got
	c2.Close()
	waitReleased(t, jobs, "41")

	// The job ended: its token is replayed in vain.
	if err := jobs.Revoke("41"); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(addr, p, protocol.HelloParams{Token: alice, User: "alice", JobID: "41"}); !errors.Is(err, ErrRefused) {
		t.Errorf("replayed after the job ended: %v", err)
	}
}

func waitReleased(t *testing.T, jobs *Jobs, id string) {
	t.Helper()
	for range 200 {
		held := false
		for _, j := range jobs.List() {
			held = held || (j.JobID == id && j.Present)
		}
		if !held {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s still held", id)
}

// A token not yet bound takes the job its first hello names (the job may
// start before sbatch answers); another job id is refused after that.
func TestFirstHelloBindsJob(t *testing.T) {
	jobs, _ := OpenJobs("")
	tok, _ := jobs.Issue("alice", 1001)
	job, err := jobs.Check(tok, "alice", "7", "node2")
	if err != nil {
		t.Fatal(err)
	}
	jobs.Release(job)
	if err := jobs.Bind(tok, "8"); !errors.Is(err, ErrWrongJob) {
		t.Errorf("rebinding to another job: %v", err)
	}
	if _, err := jobs.Check(tok, "alice", "8", "node2"); !errors.Is(err, ErrWrongJob) {
		t.Errorf("hello for another job: %v", err)
	}
}

// Only the pinned CA's certificate is trusted.
func TestOtherCARefused(t *testing.T) {
	jobs, _ := OpenJobs("")
	tok, _ := jobs.Issue("alice", 1001)
	addr, _ := serve(t, jobs, newPKI(t))
	if _, err := dial(addr, newPKI(t), protocol.HelloParams{Token: tok, User: "alice", JobID: "1"}); err == nil {
		t.Fatal("a daemon certified by another CA was trusted")
	}
}

// What arrives before a proved hello is cut: garbage, an overlong line.
func TestBadHello(t *testing.T) {
	p := newPKI(t)
	jobs, _ := OpenJobs("")
	addr, got := serve(t, jobs, p)
	for name, line := range map[string]string{
		"not json":     "hello\n",
		"other method": `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"no token":     `{"jsonrpc":"2.0","id":1,"method":"hello","params":{"user":"alice","job_id":"1"}}` + "\n",
		"overlong":     strings.Repeat("x", 3*maxHello) + "\n",
	} {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(line))
		b, _ := io.ReadAll(c)
		if !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: answered %q", name, b)
		}
		c.Close()
	}
	select {
	case a := <-got:
		t.Fatalf("delivered %+v", a.Job)
	default:
	}
}

// The Listener dials again when a connection closes, keeps trying while
// the daemon is away, gives up at its deadline, and stops on a refusal.
func TestListener(t *testing.T) {
	p := newPKI(t)
	jobs, _ := OpenJobs("")
	tok, _ := jobs.Issue("alice", 1001)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the daemon is away at first
	l := NewListener(&Dialer{Addr: addr, CA: p.Pool, Hello: protocol.HelloParams{Token: tok, User: "alice", JobID: "9"}})
	defer l.Close()

	l.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := l.Accept(); !isTimeout(err) {
		t.Fatalf("no daemon, past the deadline: %v", err)
	}
	l.SetDeadline(time.Time{})

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	time.Sleep(150 * time.Millisecond) // Accept is retrying now
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port taken meanwhile: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Accepted, 2)
	s := &Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}}, Deliver: func(a Accepted) { got <- a }}
	go s.Serve(ctx, ln2)
	c := <-accepted
	first := <-got

	// One connection at a time: the next Accept waits for this one.
	next := make(chan error, 1)
	go func() {
		c2, err := l.Accept()
		if err == nil {
			c2.Close()
		}
		next <- err
	}()
	select {
	case err := <-next:
		t.Fatalf("second Accept while the first is open: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	first.Conn.Close()
	jobs.Release(first.Job)
	c.Close()
	if err := <-next; err != nil {
		t.Fatalf("redial after close: %v", err)
	}
	second := <-got
	second.Conn.Close()
	jobs.Release(second.Job)

	jobs.Revoke("9")
	if _, err := l.Accept(); !errors.Is(err, ErrRefused) {
		t.Fatalf("after revocation: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// FuzzReadHello: whatever a peer sends before it is proved, reading the
// hello never panics, never takes more than its line, and accepts only a
// hello request with the fields it needs.
func FuzzReadHello(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"method":"hello","params":{"token":"t","user":"alice","job_id":"1"}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"method":"ping"}` + "\n"))
	f.Add([]byte("\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":0,"method":"hello","params":null}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, h, err := readHello(bufio.NewReaderSize(bytes.NewReader(b), maxHello))
		if err == nil && (h.Token == "" || h.User == "" || h.JobID == "") {
			t.Fatalf("accepted %+v from %q", h, b)
		}
	})
}
