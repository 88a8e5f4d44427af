package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/unixsock"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestMain lets the tests run agorctl itself as a child process: the
// test binary acts as agorctl when AGORCTL_RUN_MAIN is set.
func TestMain(m *testing.M) {
	if os.Getenv("AGORCTL_RUN_MAIN") == "1" {
		runMain() // as cmd/agorctl's main does
	}
	// In process, agorctl sees testBook's accounts, and runs as carol.
	accounts = func() accountBook { return testBook("/home/carol") }
	getuid = func() int { return carolUID }
	os.Exit(m.Run())
}

// runMain is cmd/agorctl's main: the test binary, run as a child, acts
// as agorctl.
func runMain() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // a second signal kills
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// result is one agorctl run.
type result struct {
	code           int
	stdout, stderr string
}

// agorctl runs a command line in process with stdin as standard input.
func agorctl(ctx context.Context, stdin io.Reader, args ...string) result {
	var out, errb bytes.Buffer
	code := Run(ctx, args, stdin, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// fakeDaemon serves a few of the daemon's routes on a Unix socket and
// records what it was sent; PUT /v1/executors/slow never answers.
type fakeDaemon struct {
	socket string
	calls  atomic.Int64
	stops  atomic.Int64 // POST /v1/tasks/tq/stop
	// attaches3 counts the attaches of term_3 (promptDaemon).
	attaches3 atomic.Int64
	bodies    chan string
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{socket: filepath.Join(t.TempDir(), "daemon.sock"), bodies: make(chan string, 16)}
	ln := listenUnix(t, d.socket)
	m := http.NewServeMux()
	reply := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if len(b) > 0 {
				d.bodies <- string(b)
			}
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m.HandleFunc("GET /v1/executors", reply(map[string]any{"executors": []map[string]any{{"user": "alice"}, {"user": "bob"}}}))
	m.HandleFunc("GET /v1/sessions", reply(apiwire.SessionList{Sessions: []apiwire.SessionView{{ID: "s1", UnixUser: "alice", AgenticTool: "codex", Cwd: ".", Status: "idle", UpdatedAt: now}}}))
	m.HandleFunc("GET /v1/sessions/changed/tasks", reply(map[string]any{"tasks": "a reply of another shape"}))
	m.HandleFunc("GET /v1/sessions/s1/tasks", reply(apiwire.TaskList{Tasks: []apiwire.TaskView{{ID: "t1", SessionID: "s1", Status: "completed", Prompt: "hello", CreatedAt: now}}}))
	m.HandleFunc("POST /v1/executors/bob/exec", reply(apiwire.ExecReply{ExecResult: protocol.ExecResult{
		Sandbox: &protocol.SandboxInfo{Level: "workspace", Warning: "this kernel has no Landlock (ABI 0): running unconfined"}}}))
	m.HandleFunc("POST /v1/executors/alice/exec", reply(apiwire.ExecReply{ExecResult: protocol.ExecResult{ExitCode: 3}, Stdout: "hi\n"}))
	m.HandleFunc("PUT /v1/executors/alice", reply(apiwire.ExecutorInfo{User: "alice", Connected: true,
		Ping: &protocol.PingResult{Pong: true, Timestamp: now.UnixMilli(), PID: 4242, UID: 1001, User: "alice", Version: "0.1.1", UptimeMS: 1520}}))
	m.HandleFunc("DELETE /v1/executors/alice", reply(map[string]any{"user": "alice", "stopped": true}))
	m.HandleFunc("PUT /v1/credentials/{name}", reply(struct{}{}))
	m.HandleFunc("POST /v1/permissions/{id}", reply(struct{}{}))
	m.HandleFunc("PUT /v1/executors/nobody", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(apiwire.ErrorBody{Error: apiwire.ErrorDetail{Code: -32002, Reason: "not_yourself", Message: "permission denied"}})
	})
	m.HandleFunc("PUT /v1/executors/slow", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	// A prompt whose model does not answer: the ids, then nothing until
	// the client goes or a second has passed.
	m.HandleFunc("POST /v1/executors/quiet/prompt", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(apiwire.PromptLine{TaskID: "tq", SessionID: "sq"})
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
			_ = json.NewEncoder(w).Encode(apiwire.PromptLine{Result: json.RawMessage(`{"status":"completed"}`)})
		}
	})
	m.HandleFunc("POST /v1/tasks/tq/stop", func(w http.ResponseWriter, _ *http.Request) {
		d.stops.Add(1)
		_ = json.NewEncoder(w).Encode(apiwire.StopReply{Stopped: true})
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.calls.Add(1)
		m.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return d
}

func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// closedStdin is standard input for a command that must not read it.
type closedStdin struct{ t *testing.T }

func (s closedStdin) Read([]byte) (int, error) {
	s.t.Errorf("standard input read")
	return 0, io.EOF
}

func TestExitStatus(t *testing.T) {
	d := newFakeDaemon(t)
	t.Setenv("AGOR_SOCKET", d.socket)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{"ok", []string{"sessions"}, exitOK, "s1       alice  codex"},
		{"ok json", []string{"sessions", "list", "--json"}, exitOK, `"id":"s1"`},
		{"ok tasks", []string{"tasks", "s1"}, exitOK, "t1    completed"},
		{"exec passes the status on", []string{"exec", "alice", "--", "sh", "-c", "exit 3"}, 3, "hi\n"},
		{"--help after -- is the command's", []string{"exec", "alice", "--", "ls", "--help"}, 3, "hi\n"},
		{"bare agorctl", []string{}, exitUsage, ""},
		{"version", []string{"--version"}, exitOK, "agorctl "},
		{"refused", []string{"executors", "start", "nobody"}, exitFailure, "executors start nobody: permission denied (not_yourself)"},
		{"no daemon", []string{"sessions", "--api", "/nonexistent/daemon.sock"}, exitFailure, "is agor-daemon running?"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown subcommand", []string{"executors", "frob"}, exitUsage, `unknown command "frob"`},
		{"bare family", []string{"creds"}, exitUsage, "name a command: delete, set"},
		{"unknown flag", []string{"sessions", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"missing operand", []string{"tasks"}, exitUsage, "want SESSION"},
		{"extra operand", []string{"doctor", "extra"}, exitUsage, `unknown command "extra"`},
		{"two users before --", []string{"exec", "alice", "bob", "--", "id"}, exitUsage, "before --"},
		{"ping needs --socket", []string{"executors", "ping"}, exitUsage, "--socket is required"},
		{"timeout", []string{"executors", "start", "slow", "--timeout", "100ms"}, exitTimeout, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := agorctl(context.Background(), closedStdin{t}, tc.args...)
			got := r.stderr
			if tc.code == exitOK || tc.code == 3 {
				got = r.stdout
			}
			if r.code != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
			}
		})
	}
}

// executors start and stop speak to people; --json gives the daemon's
// replies as they are.
func TestExecutorsStartHuman(t *testing.T) {
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "executors", "start", "--api", d.socket, "alice")
	answered := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).Local().Format("15:04:05.000")
	if want := "alice: running as alice (uid 1001), pid 4242, up 1.5s, agor-executor 0.1.1; answered at " + answered + "\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d: %q, want %q (%s)", r.code, r.stdout, want, r.stderr)
	}
	r = agorctl(context.Background(), closedStdin{t}, "executors", "start", "--api", d.socket, "--json", "alice")
	var info apiwire.ExecutorInfo
	if err := json.Unmarshal([]byte(r.stdout), &info); r.code != 0 || err != nil || info.Ping == nil || info.Ping.PID != 4242 {
		t.Fatalf("--json: exit %d: %q (%v)", r.code, r.stdout, err)
	}
	r = agorctl(context.Background(), closedStdin{t}, "executors", "stop", "--api", d.socket, "alice")
	if r.code != 0 || r.stdout != "alice: stopped\n" {
		t.Fatalf("stop: exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
}

// A prompt with no reply from the model says so on stderr, off a terminal
// too, naming the task; interrupted, agorctl stops the task.
func TestPromptWaitingAndInterrupt(t *testing.T) {
	defer func(a, e time.Duration) { quietAfter, quietEvery = a, e }(quietAfter, quietEvery)
	quietAfter, quietEvery = 100*time.Millisecond, 300*time.Millisecond
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", d.socket, "quiet", "hello")
	if r.code != 0 || !strings.Contains(r.stderr, "agorctl prompt: waiting for the model: no reply for 300ms (task tq; Ctrl-C stops it)") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if d.stops.Load() != 0 {
		t.Fatal("a completed prompt stopped its task")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r = agorctl(ctx, closedStdin{t}, "prompt", "--api", d.socket, "quiet", "hello")
	if r.code != exitInterrupt || d.stops.Load() != 1 || !strings.Contains(r.stderr, "interrupted; task tq stopped") {
		t.Fatalf("interrupted: exit %d, %d stops, stderr %q", r.code, d.stops.Load(), r.stderr)
	}
}

// SIGINT cancels the command's context: agorctl exits 130.
func TestExitInterrupted(t *testing.T) {
	d := newFakeDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r := agorctl(ctx, closedStdin{t}, "executors", "start", "--api", d.socket, "slow")
	if r.code != exitInterrupt {
		t.Fatalf("exit %d, want %d: %s", r.code, exitInterrupt, r.stderr)
	}
}

// creds set reads the key from standard input, never from the command line.
func TestCredsSet(t *testing.T) {
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), strings.NewReader("sk-test\n"), "creds", "set", "ANTHROPIC_API_KEY", "--daemon", "--api", d.socket)
	if r.code != 0 || r.stdout != "ANTHROPIC_API_KEY set (daemon)\n" {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
	if body := <-d.bodies; body != `{"value":"sk-test","scope":"daemon"}` {
		t.Fatalf("body %s", body)
	}
	r = agorctl(context.Background(), strings.NewReader(""), "creds", "set", "X", "--api", d.socket)
	if r.code != exitFailure || !strings.Contains(r.stderr, "no value on standard input") {
		t.Fatalf("empty stdin: exit %d: %q", r.code, r.stderr)
	}
}

// TestTasksBadReply: a reply that does not decode fails the command; it
// printed an empty table and exited 0.
func TestTasksBadReply(t *testing.T) {
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "tasks", "changed", "--api", d.socket)
	if r.code != exitFailure || !strings.Contains(r.stderr, "reply does not decode") || r.stdout != "" {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestPermissionsApprove(t *testing.T) {
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "permissions", "approve", "perm_1", "--reason", "ok", "--api", d.socket)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if body := <-d.bodies; body != `{"approved":true,"reason":"ok"}` {
		t.Fatalf("body %s", body)
	}
}

func startExecutor(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "e.sock")
	ln, err := unixsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := executor.NewServer(executor.Config{Policy: peer.Policy{UID: uint32(os.Getuid())}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() { srv.Stop("test"); <-done })
	return path
}

// executors ping, and its old spelling executor ping (hidden), reach the
// executor's socket directly.
func TestExecutorsPing(t *testing.T) {
	path := startExecutor(t)
	for _, args := range [][]string{
		{"executors", "ping", "--socket", path},
		{"executor", "ping", "--socket", path},
	} {
		r := agorctl(context.Background(), closedStdin{t}, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var res protocol.PingResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.Pong || res.UID != os.Getuid() {
			t.Fatalf("%v: output %q: %v", args, r.stdout, err)
		}
	}
	r := agorctl(context.Background(), closedStdin{t}, "executors", "ping", "--socket", "/nonexistent/x.sock")
	if r.code != exitFailure || !strings.Contains(r.stderr, "connect to /nonexistent/x.sock") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// The old spellings still parse as they did: executor stop and list take
// the backend's flags, without --no-daemon.
func TestLegacyExecutor(t *testing.T) {
	for _, args := range [][]string{
		{"executor", "list", "--config", "/nonexistent.yaml", "--backend", "bogus"},
		{"executor", "stop", "--config", "/nonexistent.yaml", "--backend", "bogus", "alice"},
		{"executors", "list", "--no-daemon", "--config", "/nonexistent.yaml", "--backend", "bogus"},
	} {
		r := agorctl(context.Background(), closedStdin{t}, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `unknown backend "bogus"`) {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
}

// TestWorkspaceNeedsCwd: --sandbox workspace with the default --cwd (the
// home directory) is refused before anything is sent.
func TestWorkspaceNeedsCwd(t *testing.T) {
	d := newFakeDaemon(t)
	for _, args := range [][]string{
		{"prompt", "alice", "hi", "--sandbox", "workspace"},
		{"exec", "alice", "--sandbox", "workspace", "--cwd", ".", "--", "true"},
		{"terminal", "alice", "--sandbox", "workspace", "--cwd", "/"},
	} {
		r := agorctl(context.Background(), closedStdin{t}, append(args, "--api", d.socket)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--cwd") {
			t.Errorf("%v: exit %d: %q", args, r.code, r.stderr)
		}
	}
	if n := d.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the daemon", n)
	}
}

// TestSandboxWarningPrinted: a level not enforced is printed where the
// person sees it (it was only in the JSON).
func TestSandboxWarningPrinted(t *testing.T) {
	d := newFakeDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "exec", "bob", "--api", d.socket, "--sandbox", "workspace", "--cwd", "proj", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: sandbox workspace not enforced: this kernel has no Landlock") {
		t.Fatalf("exit %d: %q", r.code, r.stderr)
	}
}
