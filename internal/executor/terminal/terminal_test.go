package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// peer is the daemon's end of one connection to the executor; it
// collects what the terminals send.
type peer struct {
	c     *rpc.Conn
	stop  func()
	mu    sync.Mutex
	outs  map[string]*bytes.Buffer
	seqs  map[string]int64 // next expected seq per terminal
	first map[string]int64 // the first seq received per terminal
	exits map[string]protocol.TerminalExit
	bad   []string // protocol problems seen
	wake  chan struct{}
}

type fixture struct {
	svc  *Service
	sc   *rpc.Mux
	root string
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := fsroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root = r
	svc := New(cfg)
	mux := rpc.NewMux()
	svc.Register(mux)
	t.Cleanup(func() { svc.Close(); r.Close() })
	return &fixture{svc: svc, sc: mux, root: root}
}

// connect makes a connection pair over a socketpair, like the daemon's.
func (f *fixture) connect(t testing.TB) *peer { return f.connectWith(t, nil) }

// connectWith is connect with h, when given, handling what the
// executor sends instead of the peer's own collecting handlers.
func (f *fixture) connectWith(t testing.TB, h rpc.Handler) *peer {
	t.Helper()
	x, y := rpctest.Socketpair(t)
	p := &peer{outs: map[string]*bytes.Buffer{}, seqs: map[string]int64{}, first: map[string]int64{}, exits: map[string]protocol.TerminalExit{}, wake: make(chan struct{}, 1)}
	if h == nil {
		cm := rpc.NewMux()
		cm.Register(protocol.MethodTerminalOutput, p.onOutput)
		cm.Register(protocol.MethodTerminalExit, p.onExit)
		h = cm
	}
	sc := rpc.NewConn(x, f.sc, rpc.Options{})
	p.c = rpc.NewConn(y, h, rpc.Options{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = sc.Serve(context.Background()) }()
	go func() { defer wg.Done(); _ = p.c.Serve(context.Background()) }()
	var once sync.Once
	p.stop = func() { once.Do(func() { p.c.Close(); sc.Close(); wg.Wait() }) }
	t.Cleanup(p.stop)
	return p
}

func (p *peer) onOutput(_ context.Context, r *rpc.Request) (any, error) {
	var o protocol.TerminalOutput
	if err := json.Unmarshal(r.Params, &o); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if want, ok := p.seqs[o.TerminalID]; ok && o.Seq != want {
		p.bad = append(p.bad, "seq "+strconv.FormatInt(o.Seq, 10)+" want "+strconv.FormatInt(want, 10))
	}
	p.seqs[o.TerminalID] = o.Seq + 1
	if _, ok := p.first[o.TerminalID]; !ok {
		p.first[o.TerminalID] = o.Seq
	}
	if p.outs[o.TerminalID] == nil {
		p.outs[o.TerminalID] = &bytes.Buffer{}
	}
	p.outs[o.TerminalID].Write(o.Data)
	p.mu.Unlock()
	p.poke()
	return nil, nil
}

func (p *peer) onExit(_ context.Context, r *rpc.Request) (any, error) {
	var e protocol.TerminalExit
	if err := json.Unmarshal(r.Params, &e); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.exits[e.TerminalID] = e
	p.mu.Unlock()
	p.poke()
	return nil, nil
}

func (p *peer) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the peer's state.
func (p *peer) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		ok := cond()
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-p.wake:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("timed out waiting for %s; output so far:\n%s", what, p.dump())
		}
	}
}

func (p *peer) dump() string {
	var b strings.Builder
	for id, o := range p.outs {
		b.WriteString(id + ": " + strconv.Quote(o.String()) + "\n")
	}
	return b.String()
}

func (p *peer) output(id string) string {
	if o := p.outs[id]; o != nil {
		return o.String()
	}
	return ""
}

// waitOutput waits for s in a terminal's output.
func (p *peer) waitOutput(t testing.TB, id, s string) {
	t.Helper()
	p.waitFor(t, strconv.Quote(s), func() bool { return strings.Contains(p.output(id), s) })
}

func (p *peer) waitExit(t testing.TB, id string) protocol.TerminalExit {
	t.Helper()
	var e protocol.TerminalExit
	p.waitFor(t, "terminal_exit", func() bool {
		var ok bool
		e, ok = p.exits[id]
		return ok
	})
	return e
}

func (p *peer) spawn(t testing.TB, sp protocol.SpawnTerminalParams) protocol.SpawnTerminalResult {
	t.Helper()
	if sp.Cols == 0 {
		sp.Cols, sp.Rows = 80, 24
	}
	if sp.Shell == "" {
		sp.Shell = "/bin/sh"
	}
	var res protocol.SpawnTerminalResult
	if err := p.c.Call(context.Background(), "spawn_terminal", sp, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func (p *peer) send(t testing.TB, id, s string) {
	t.Helper()
	if err := p.c.Notify(protocol.MethodTerminalInput, protocol.TerminalInputParams{TerminalID: id, Data: []byte(s)}); err != nil {
		t.Fatal(err)
	}
}

func TestShellBasics(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	res := p.spawn(t, protocol.SpawnTerminalParams{Cwd: "work"})
	if res.PID <= 0 || res.TerminalID == "" {
		t.Fatalf("spawn: %+v", res)
	}
	id := res.TerminalID
	// Markers are built by the shell, so the echoed command line never matches.
	p.send(t, id, "echo U=$(id -un)=U\n")
	p.waitOutput(t, id, "U="+me.Username+"=U")
	p.send(t, id, "echo D=$(pwd)=D\n")
	p.waitOutput(t, id, "D="+filepath.Join(f.root, "work")+"=D")
	p.send(t, id, "echo S=$(stty size)=S\n")
	p.waitOutput(t, id, "S=24 80=S")
	if err := p.c.Call(context.Background(), "resize_terminal", protocol.ResizeTerminalParams{TerminalID: id, Cols: 132, Rows: 50}, nil); err != nil {
		t.Fatal(err)
	}
	p.send(t, id, "echo S=$(stty size)=S\n")
	p.waitOutput(t, id, "S=50 132=S")
	p.send(t, id, "exit 7\n")
	e := p.waitExit(t, id)
	if e.ExitCode != 7 || e.Signal != "" {
		t.Fatalf("exit: %+v, want code 7", e)
	}
	p.mu.Lock() // not held across the call below (see TestReattach)
	bad := append([]string(nil), p.bad...)
	p.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("protocol problems: %v", bad)
	}
	if err := p.c.Call(context.Background(), "resize_terminal", protocol.ResizeTerminalParams{TerminalID: id, Cols: 1, Rows: 1}, nil); !rpc.IsCode(err, protocol.CodeNotFound) {
		t.Fatalf("terminal still there after exit: %v", err)
	}
}

// Input reaches the program byte for byte (raw mode, no echo).
func TestInputReachesProgram(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	p.send(t, id, "stty raw -echo; echo READY$((1+1)); head -c 5 | od -An -c; echo DONE$((1+1))\n")
	p.waitOutput(t, id, "READY2")
	p.send(t, id, "ab\x01cd")
	p.waitOutput(t, id, "DONE2")
	out := p.out(id)
	if !strings.Contains(out, "a   b 001   c   d") {
		t.Fatalf("program did not get the input: %q", out)
	}
}

func (p *peer) out(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output(id)
}

func TestEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("LISTEN_FDS", "1")
	t.Setenv("NOTIFY_SOCKET", "/run/x")
	t.Setenv("AGOR_EXECUTOR_ROOT", "/x")
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{Env: map[string]string{"FOO": "bar"}}).TerminalID
	p.send(t, id, `echo "E=${ANTHROPIC_API_KEY:-none}/${LISTEN_FDS:-none}/${NOTIFY_SOCKET:-none}/${AGOR_EXECUTOR_ROOT:-none}/$FOO/$TERM/${LANG:-none}=E$((1+1))"`+"\n")
	p.waitOutput(t, id, "=E2")
	out := p.out(id)
	if !strings.Contains(out, "E=none/none/none/none/bar/xterm-256color/") {
		t.Fatalf("environment leaked or incomplete: %q", out)
	}
	// The count is framed by markers the echoed command line cannot contain, so
	// the shell's prompt (which may land before or after the echo) cannot
	// disturb the match.
	p.send(t, id, "echo N$((1+1))=$(env | grep -c -e _API_KEY -e ^LISTEN_ -e ^NOTIFY_SOCKET -e ^WATCHDOG_ -e ^AGOR_)=N$((1+1))\n")
	p.waitOutput(t, id, "=N2")
	if !strings.Contains(p.out(id), "N2=0=N2") {
		t.Fatalf("env has blocked variables: %q", p.out(id))
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, Config{MaxTerminals: 2})
	p := f.connect(t)
	for _, tc := range []struct {
		name   string
		method string
		params any
		code   int
		reason string
	}{
		{"escape", "spawn_terminal", protocol.SpawnTerminalParams{Cwd: "../", Cols: 80, Rows: 24}, protocol.CodePermissionDenied, "path_escape"},
		{"absolute escape", "spawn_terminal", protocol.SpawnTerminalParams{Cwd: "/etc", Cols: 80, Rows: 24}, protocol.CodePermissionDenied, "path_escape"},
		{"missing cwd", "spawn_terminal", protocol.SpawnTerminalParams{Cwd: "missing", Cols: 80, Rows: 24}, protocol.CodeNotFound, "not_found"},
		{"cols", "spawn_terminal", protocol.SpawnTerminalParams{Cols: 0, Rows: 24}, rpc.CodeInvalidParams, ""},
		{"rows", "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 1001}, rpc.CodeInvalidParams, ""},
		{"blocked env", "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Env: map[string]string{"LISTEN_FDS": "3"}}, rpc.CodeInvalidParams, ""},
		{"bad env name", "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Env: map[string]string{"A=B": "3"}}, rpc.CodeInvalidParams, ""},
		{"no shell", "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Shell: "/no/such/shell"}, rpc.CodeInternalError, "spawn_failed"},
		{"resize unknown", "resize_terminal", protocol.ResizeTerminalParams{TerminalID: "nope", Cols: 80, Rows: 24}, protocol.CodeNotFound, "not_found"},
		{"terminate unknown", "terminate_terminal", protocol.TerminalIDParams{TerminalID: "nope"}, protocol.CodeNotFound, "not_found"},
		{"attach unknown", "attach_terminal", protocol.TerminalIDParams{TerminalID: "nope"}, protocol.CodeNotFound, "not_found"},
	} {
		err := p.c.Call(context.Background(), tc.method, tc.params, nil)
		var e *rpc.Error
		if !rpc.IsCode(err, tc.code) || (tc.reason != "" && (!asErr(err, &e) || e.Reason() != tc.reason)) {
			t.Errorf("%s: %v, want code %d reason %q", tc.name, err, tc.code, tc.reason)
		}
	}
	p.spawn(t, protocol.SpawnTerminalParams{})
	p.spawn(t, protocol.SpawnTerminalParams{})
	err := p.c.Call(context.Background(), "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Shell: "/bin/sh"}, nil)
	var e *rpc.Error
	if !rpc.IsCode(err, rpc.CodeLimitReached) || !asErr(err, &e) || e.Reason() != "too_many_terminals" {
		t.Fatalf("third terminal: %v, want too_many_terminals", err)
	}
}

func asErr(err error, e **rpc.Error) bool {
	x, ok := err.(*rpc.Error)
	*e = x
	return ok
}

// terminate_terminal ends the shell and every process it started, in
// its group and in the groups job control gave background jobs.
func TestTerminateKillsSession(t *testing.T) {
	f := newFixture(t, Config{KillGrace: 300 * time.Millisecond})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{Cwd: "work"}).TerminalID
	// The foreground sleep ignores SIGHUP, so only SIGKILL ends it.
	p.send(t, id, "sleep 1000 & echo $! > bg.pid; sh -c 'trap \"\" HUP; echo $$ > fg.pid; exec sleep 1000'\n")
	bg := readPid(t, filepath.Join(f.root, "work", "bg.pid"))
	fg := readPid(t, filepath.Join(f.root, "work", "fg.pid"))
	var res protocol.TerminateTerminalResult
	if err := p.c.Call(context.Background(), "terminate_terminal", protocol.TerminalIDParams{TerminalID: id}, &res); err != nil || !res.Terminated {
		t.Fatalf("terminate: %+v %v", res, err)
	}
	e := p.waitExit(t, id)
	if e.Signal == "" {
		t.Errorf("exit %+v: want a signal", e)
	}
	waitGone(t, bg)
	waitGone(t, fg)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	for range 500 {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not written", path)
	return 0
}

// alive: kill(pid, 0) succeeds and the process is not a zombie waiting
// for init to reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// waitGone waits for pid to end: it may still be exiting when the PTY
// reports its end.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
