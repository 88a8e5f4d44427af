package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/unixsock"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("AGOR_TEST_PING_AS_PEER"); path != "" {
		os.Exit(pingAsPeer(path))
	}
	goleak.VerifyTestMain(m)
}

// pingAsPeer is the child of TestGroupPeerRefused: it pings the executor
// at path and exits 0 when answered, 3 when the connection was refused.
func pingAsPeer(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		return 4
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
		return 3
	}
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	if bytes.Contains(buf[:n], []byte(`"pong":true`)) {
		return 0
	}
	return 3
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	srv  *Server
	path string
	logs *syncBuffer
	done chan error
}

// start serves a Server on a fresh socket; cleanup stops it and waits.
func start(t *testing.T, cfg Config, setup ...func(*Server)) *fixture {
	t.Helper()
	f := &fixture{path: filepath.Join(t.TempDir(), "e.sock"), logs: &syncBuffer{}, done: make(chan error, 1)}
	cfg.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.srv = NewServer(cfg)
	for _, s := range setup {
		s(f.srv)
	}
	ln, err := unixsock.Listen(f.path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { f.done <- f.srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		f.srv.Stop("test over")
		select {
		case <-f.done:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Stop")
		}
	})
	return f
}

func (f *fixture) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.done:
		f.done <- err // for cleanup
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop within 5s")
		return nil
	}
}

func dial(t *testing.T, path string) *rpc.Client {
	t.Helper()
	c, err := rpc.Dial(context.Background(), path, nil, rpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func self() peer.Policy { return peer.Policy{UID: uint32(os.Getuid())} }

func TestPingReportsIdentity(t *testing.T) {
	f := start(t, Config{Policy: self()})
	var res protocol.PingResult
	if err := dial(t, f.path).Call(context.Background(), "ping", nil, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Pong || res.UID != os.Getuid() || res.PID != os.Getpid() || res.User != CurrentUser() || res.Version == "" {
		t.Fatalf("ping = %+v", res)
	}
}

// A peer whose uid the policy does not allow is closed without a reply,
// and the refusal is logged with who it was.
func TestRefusesOtherPeers(t *testing.T) {
	other := peer.Policy{UID: uint32(os.Getuid()) + 4242} // root not allowed either
	f := start(t, Config{Policy: other})
	err := dial(t, f.path).Call(context.Background(), "ping", nil, nil)
	if !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("ping from a refused peer = %v, want the connection closed", err)
	}
	if want := "refused connection"; !strings.Contains(f.logs.String(), want) ||
		!strings.Contains(f.logs.String(), "peer_uid="+strconv.Itoa(os.Getuid())) {
		t.Fatalf("no refusal line naming the peer in logs:\n%s", f.logs)
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		pol  peer.Policy
		cred peer.Cred
		ok   bool
	}{
		{peer.Policy{AllowRoot: true, UID: 100}, peer.Cred{UID: 0}, true},
		{peer.Policy{UID: 100}, peer.Cred{UID: 0}, false},
		{peer.Policy{UID: 100}, peer.Cred{UID: 100}, true},
		{peer.Policy{UID: 100}, peer.Cred{UID: 101, GID: 50}, false},
		{peer.Policy{UID: 100}, peer.Cred{UID: 101, GID: 100}, false}, // the daemon's group is not the daemon
	}
	for i, tc := range tests {
		if err := tc.pol.Check(tc.cred); (err == nil) != tc.ok {
			t.Errorf("case %d: Check(%+v) = %v, want ok=%v", i, tc.cred, err, tc.ok)
		}
	}
}

// TestGroupPeerRefused: a process with the daemon's gid but another uid
// is refused; one with the daemon's uid is served (real processes, real
// SO_PEERCRED; needs root to run them as those ids).
func TestGroupPeerRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run peers as other uids")
	}
	const daemonUID, daemonGID, otherUID = 4242, 4242, 4243
	f := start(t, Config{Policy: peer.Policy{UID: daemonUID}})
	// The peers are other uids: open the way to the socket and to a copy
	// of this test binary (go test keeps it in a private directory).
	dir := filepath.Dir(f.path)
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(f.path, 0o666); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "peer")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid, gid uint32
		want     int
	}{{otherUID, daemonGID, 3}, {daemonUID, daemonGID, 0}} {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), "AGOR_TEST_PING_AS_PEER="+f.path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.gid}}
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.want {
			t.Errorf("peer uid %d gid %d: exit %d, want %d (0 served, 3 refused); log:\n%s", tc.uid, tc.gid, code, tc.want, f.logs)
		}
	}
	if !strings.Contains(f.logs.String(), "4243") {
		t.Errorf("the refusal does not name the peer's uid:\n%s", f.logs)
	}
}

// Idle exit waits for connections and holds to end, then happens alone.
func TestIdleExitWaitsForWork(t *testing.T) {
	f := start(t, Config{Policy: self(), IdleTimeout: 100 * time.Millisecond})
	release := f.srv.Hold()
	c := dial(t, f.path)
	time.Sleep(300 * time.Millisecond)
	if err := c.Call(context.Background(), "ping", nil, nil); err != nil {
		t.Fatalf("server went idle with a connection and a hold: %v", err)
	}
	c.Close()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-f.done:
		t.Fatalf("server exited (%v) while work was held", err)
	default:
	}
	release()
	if err := f.wait(t); !errors.Is(err, ErrIdle) {
		t.Fatalf("Serve = %v, want ErrIdle", err)
	}
}

// A hold that is no work to finish (an idle warm agent) is let go through
// OnStop as the stop begins: neither SIGTERM's drain nor the shutdown
// method waits out its timeout for it, and shutdown says "idle".
func TestStopLetsGoOfIdleHolds(t *testing.T) {
	for _, how := range []string{"stop", "shutdown"} {
		t.Run(how, func(t *testing.T) {
			f := start(t, Config{Policy: self(), StopTimeout: time.Hour})
			release := f.srv.Hold()
			f.srv.OnStop(release)
			if how == "stop" {
				f.srv.Stop("test")
			} else {
				var res protocol.ShutdownResult
				err := dial(t, f.path).Call(context.Background(), "shutdown", protocol.ShutdownParams{TimeoutMS: 3_600_000}, &res)
				if err != nil || res.Status != "idle" {
					t.Fatalf("shutdown = %+v, %v; want idle", res, err)
				}
			}
			if err := f.wait(t); err != nil { // not an hour
				t.Fatalf("Serve = %v", err)
			}
		})
	}
}

func TestShutdownMethod(t *testing.T) {
	f := start(t, Config{Policy: self()})
	var res protocol.ShutdownResult
	err := dial(t, f.path).Call(context.Background(), "shutdown", protocol.ShutdownParams{Reason: "test", TimeoutMS: 100}, &res)
	if err != nil || res.Status != "idle" {
		t.Fatalf("shutdown = %+v, %v; want status idle", res, err)
	}
	if err := f.wait(t); err != nil {
		t.Fatalf("Serve after shutdown = %v", err)
	}
	if _, err := net.Dial("unix", f.path); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// shutdown with work still running past timeout_ms says "interrupted",
// and the running request is cancelled.
func TestShutdownInterrupts(t *testing.T) {
	f := start(t, Config{Policy: self()})
	cancelled := make(chan struct{})
	f.srv.Mux().Register("long", func(ctx context.Context, _ *rpc.Request) (any, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	c := dial(t, f.path)
	go func() { _ = c.Call(context.Background(), "long", nil, nil) }()
	for f.srv.inFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	var res protocol.ShutdownResult
	if err := dial(t, f.path).Call(context.Background(), "shutdown", protocol.ShutdownParams{TimeoutMS: 50}, &res); err != nil || res.Status != "interrupted" {
		t.Fatalf("shutdown = %+v, %v; want interrupted", res, err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("long request not cancelled after shutdown")
	}
	_ = f.wait(t)
}

func TestShutdownRejectsBadParams(t *testing.T) {
	f := start(t, Config{Policy: self()})
	err := dial(t, f.path).Call(context.Background(), "shutdown", map[string]any{"timeout_ms": -1}, nil)
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != rpc.CodeInvalidParams || e.Data["field"] != "timeout_ms" {
		t.Fatalf("shutdown with negative timeout = %v, want -32602 naming timeout_ms", err)
	}
}

func TestListenPathRefusesLiveSocket(t *testing.T) {
	f := start(t, Config{Policy: self()})
	if _, err := unixsock.Listen(f.path); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("ListenPath over a live socket = %v", err)
	}
}

// A stopping executor takes no new work and says so (shutting_down), so
// the daemon asks a new one; what winds work down is still served.
func TestStoppingRefusesNewWork(t *testing.T) {
	f := start(t, Config{Policy: self(), StopTimeout: 5 * time.Second})
	f.srv.Mux().Register("work", func(context.Context, *rpc.Request) (any, error) { return "done", nil })
	c := dial(t, f.path)
	if err := c.Call(context.Background(), "work", nil, nil); err != nil { // admitted
		t.Fatal(err)
	}
	release := f.srv.Hold() // running work: Stop waits for it, connections stay
	defer release()
	f.srv.Stop("test")
	err := c.Call(context.Background(), "work", nil, nil)
	var e *rpc.Error
	if !errors.As(err, &e) || e.Code != protocol.CodeExecutorUnavailable || e.Reason() != protocol.ReasonShuttingDown {
		t.Fatalf("new work while stopping: %v, want shutting_down", err)
	}
	var ping protocol.PingResult
	if err := c.Call(context.Background(), protocol.MethodPing, nil, &ping); err != nil || !ping.Pong {
		t.Fatalf("ping while stopping: %+v %v", ping, err)
	}
}

// TestJournalMessagesSayWhatHappened: each line's message says what
// happened on its own (journalctl's plain output shows the message only):
// the method, whom the executor serves, the outcome; the peer of a
// connection.
func TestJournalMessagesSayWhatHappened(t *testing.T) {
	f := start(t, Config{Policy: self()})
	f.srv.Mux().Register(protocol.MethodExec, rpc.Method(func(context.Context, struct{}) (protocol.ExecResult, error) {
		return protocol.ExecResult{ExitCode: 3}, nil
	}))
	f.srv.Mux().Register("boom", func(context.Context, *rpc.Request) (any, error) {
		return nil, rpc.Errorf(rpc.CodeInternalError, "boom", "it broke")
	})
	c := dial(t, f.path)
	_ = c.Call(context.Background(), protocol.MethodExec, nil, nil)
	_ = c.Call(context.Background(), "boom", nil, nil)
	c.Close()
	me := CurrentUser()
	want := []string{
		fmt.Sprintf(`msg="connection from uid %d (pid %d) accepted: serving %s"`, os.Getuid(), os.Getpid(), me),
		fmt.Sprintf(`msg="exec for %s: exit status 3 in `, me),
		fmt.Sprintf(`msg="boom for %s: failed in `, me),
		fmt.Sprintf(`msg="connection from uid %d (pid %d) closed`, os.Getuid(), os.Getpid()),
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		missing := ""
		for _, w := range want {
			if !strings.Contains(f.logs.String(), w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no line with %s in:\n%s", missing, f.logs)
		}
	}
}
