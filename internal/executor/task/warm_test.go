package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// warmFake is an Opener whose "process" is a fakeLive: it shows which
// turns ran on which process, and when a process was stopped.
type warmFake struct{}

var fakePids atomic.Int64

func (warmFake) CredentialKey() string { return "FAKE_API_KEY" }

func (f warmFake) Run(ctx context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	res, l, err := f.Open(ctx, req, h)
	if l != nil {
		l.Close()
	}
	return res, err
}

func (warmFake) Open(ctx context.Context, req agent.Request, h agent.Host) (agent.Result, agent.Live, error) {
	l := newFakeLive(req)
	res, err := l.Turn(ctx, req, h)
	return res, l, err
}

var fakeLives sync.Map // pid → *fakeLive

// fakeGates holds a turn whose prompt names a gate until it is closed.
var fakeGates sync.Map // prompt → chan struct{}

type fakeLive struct {
	pid      int
	modeLive bool
	ready    chan struct{} // a pre-warmed fake's handshake: its first turn waits for it
	session  string
	mu       sync.Mutex
	turns    int
	closed   bool
}

func (l *fakeLive) Turn(_ context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	if gate, ok := fakeGates.Load(req.Prompt); ok { // a test holds the turn open
		<-gate.(chan struct{})
	}
	if l.ready != nil {
		<-l.ready
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return agent.Result{}, agent.ErrGone
	}
	l.turns++
	h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": fmt.Sprintf("pid=%d turn=%d mode=%s model=%s", l.pid, l.turns, req.PermissionMode, req.Model)}})
	return agent.Result{Status: "completed", MessageCount: 1, AgentSession: fmt.Sprint("agent-", l.pid)}, nil
}

func (l *fakeLive) Usable() bool { l.mu.Lock(); defer l.mu.Unlock(); return !l.closed }

// CanSwitchMode: a mode-live fake switches to any mode but
// bypassPermissions (as Claude Code started in another mode does).
func (l *fakeLive) CanSwitchMode(mode string) bool {
	return l.modeLive && mode != "bypassPermissions"
}

// CanSwitchModel: a mode-live fake switches to any named model.
func (l *fakeLive) CanSwitchModel(model string) bool { return l.modeLive && model != "" }
func (l *fakeLive) Pid() int                         { return l.pid }
func (l *fakeLive) Close()                           { l.slowClose(); l.mu.Lock(); l.closed = true; l.mu.Unlock() }

func (l *fakeLive) isClosed() bool { return !l.Usable() }

func init() { agent.Register("fakewarm", warmFake{}) }

// warmRig runs prompts of the fakewarm agent against a Service with limits.
type warmRig struct {
	t     *testing.T
	d     *daemonSide
	svc   *Service
	conn  *rpc.Conn // the daemon's end
	holds *countHolder
	cwd   string // "work"'s real path
	run   func(session, mode string, extra map[string]any) (protocol.ExecutePromptResult, string)
}

func newWarmRig(t *testing.T, l WarmLimits, more ...func(*Service)) *warmRig {
	d := &daemonSide{key: "k"}
	holds := &countHolder{}
	conn, cwd, svc := setupService(t, d, func(s *Service) {
		s.Warm, s.Hold = l, holds
		for _, f := range more {
			f(s)
		}
	})
	r := &warmRig{t: t, d: d, svc: svc, conn: conn, holds: holds, cwd: cwd}
	n := 0
	r.run = func(session, mode string, extra map[string]any) (protocol.ExecutePromptResult, string) {
		t.Helper()
		n++
		p := prompt(fmt.Sprint("t", n), "hi")
		p["agentic_tool"], p["session_id"], p["permission_mode"] = "fakewarm", session, mode
		for k, v := range extra {
			p[k] = v
		}
		var res protocol.ExecutePromptResult
		if err := conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil || res.Status != "completed" {
			t.Fatalf("execute_prompt: %v %+v", err, res)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		return res, d.events[len(d.events)-1].Event.Data["text"].(string)
	}
	return r
}

func (r *warmRig) live(text string) *fakeLive {
	var pid int
	_, _ = fmt.Sscanf(text, "pid=%d", &pid)
	l, ok := fakeLives.Load(pid)
	if !ok {
		r.t.Fatalf("no process in %q", text)
	}
	return l.(*fakeLive)
}

var roomy = WarmLimits{Idle: time.Minute, PerUser: 4}

// A session's second prompt runs on the process of its first; a change
// of what the process was started with (cwd, permission mode for an
// agent that cannot switch to it live) restarts it.
func TestWarmReuseAndSettings(t *testing.T) {
	r := newWarmRig(t, roomy)
	res, first := r.run("s1", "default", nil)
	if res.Warm {
		t.Fatalf("first prompt ran warm: %+v", res)
	}
	res, second := r.run("s1", "default", nil)
	if !res.Warm || r.live(second) != r.live(first) || res.AgentSessionID != "agent-"+fmt.Sprint(r.live(first).pid) {
		t.Fatalf("second prompt: %+v %q (first %q)", res, second, first)
	}
	res, third := r.run("s1", "bypassPermissions", nil)
	if res.Warm || r.live(third) == r.live(first) {
		t.Fatalf("mode change kept the process: %+v %q", res, third)
	}
	waitFor(t, "the old process stopped", r.live(first).isClosed)
	// An agent that changes its mode live keeps its process, unless it
	// cannot switch to the mode asked for.
	res, a := r.run("s2", "default", map[string]any{"model": "mode-live"})
	res2, b := r.run("s2", "plan", map[string]any{"model": "mode-live"})
	if res.Warm || !res2.Warm || r.live(a) != r.live(b) || b != fmt.Sprintf("pid=%d turn=2 mode=plan model=mode-live", r.live(a).pid) {
		t.Fatalf("live mode change: %q then %q, warm %v", a, b, res2.Warm)
	}
	res3, c := r.run("s2", "bypassPermissions", map[string]any{"model": "mode-live"})
	if res3.Warm || r.live(c) == r.live(a) {
		t.Fatalf("a mode it cannot switch to kept the process: %+v %q", res3, c)
	}
}

// A change of model: kept on an agent that switches models live (then
// running with the new one, so going back to the CLI's default, which it
// cannot name, restarts it), restarted on one that cannot.
func TestWarmModelChange(t *testing.T) {
	r := newWarmRig(t, roomy)
	_, a := r.run("s1", "default", map[string]any{"model": "mode-live"})
	res, b := r.run("s1", "default", map[string]any{"model": "other"})
	if !res.Warm || b != fmt.Sprintf("pid=%d turn=2 mode=default model=other", r.live(a).pid) {
		t.Fatalf("live model change: %q then %q, warm %v", a, b, res.Warm)
	}
	if res, c := r.run("s1", "default", map[string]any{"model": "other"}); !res.Warm || r.live(c) != r.live(a) {
		t.Fatalf("same model again: %q, warm %v", c, res.Warm)
	}
	if res, d := r.run("s1", "default", nil); res.Warm || r.live(d) == r.live(a) {
		t.Fatalf("back to the default model kept the process running other: %q", d)
	}
	_, e := r.run("s2", "default", map[string]any{"model": "one"})
	if res, f := r.run("s2", "default", map[string]any{"model": "two"}); res.Warm || r.live(f) == r.live(e) {
		t.Fatalf("an agent that cannot switch models kept its process: %q then %q", e, f)
	}
}

// A warm process found gone at the next prompt: the prompt runs cold.
func TestWarmGoneFallsBack(t *testing.T) {
	r := newWarmRig(t, roomy)
	_, first := r.run("s1", "default", nil)
	r.live(first).Close() // as if it had crashed between turns
	res, second := r.run("s1", "default", nil)
	if res.Warm || r.live(second) == r.live(first) {
		t.Fatalf("after a crash: %+v %q", res, second)
	}
	if got := r.svc.pool().len(); got != 1 {
		t.Fatalf("%d warm agents, want 1", got)
	}
}

// Idle agents are stopped after Idle; the next prompt starts cold. The
// executor counts a warm agent as work (a hold) until then, no longer.
func TestWarmIdleStop(t *testing.T) {
	r := newWarmRig(t, WarmLimits{Idle: 150 * time.Millisecond, PerUser: 4})
	_, first := r.run("s1", "default", nil)
	// The task's own hold goes just after its result is out (task.go
	// releases it after ended wakes the waiter): read at once, it was
	// counted twice once in CI. Waited for: one hold, the warm agent's.
	waitFor(t, "one hold on the executor, the warm agent's", func() bool { return r.holds.n.Load() == 1 })
	waitFor(t, "the idle agent stopped", r.live(first).isClosed)
	waitFor(t, "the executor let go", func() bool { return r.holds.n.Load() == 0 })
	if n := r.svc.pool().len(); n != 0 {
		t.Fatalf("%d warm agents after the idle stop", n)
	}
	if res, _ := r.run("s1", "default", nil); res.Warm {
		t.Fatal("ran warm after the idle stop")
	}
}

// Beyond PerUser the least recently used agent goes first.
func TestWarmPerUserCap(t *testing.T) {
	r := newWarmRig(t, WarmLimits{Idle: time.Minute, PerUser: 2})
	_, a := r.run("s1", "default", nil)
	_, b := r.run("s2", "default", nil)
	if res, _ := r.run("s1", "default", nil); !res.Warm { // s1 is now the most recent
		t.Fatal("s1 not warm")
	}
	_, c := r.run("s3", "default", nil)
	waitFor(t, "s2, the least recently used, stopped", r.live(b).isClosed)
	if r.live(a).isClosed() || r.live(c).isClosed() {
		t.Fatal("a more recently used agent was stopped")
	}
	if n := r.svc.pool().len(); n != 2 {
		t.Fatalf("%d warm agents, want 2", n)
	}
}

// Beyond the memory budget the least recently used agents go.
func TestWarmMemoryBudget(t *testing.T) {
	r := newWarmRig(t, WarmLimits{Idle: time.Minute, PerUser: 10, MemoryBytes: 250})
	r.svc.pool().rss = func(int) int64 { return 100 }
	_, a := r.run("s1", "default", nil)
	_, b := r.run("s2", "default", nil)
	_, c := r.run("s3", "default", nil)
	waitFor(t, "s1 stopped", r.live(a).isClosed)
	if r.live(b).isClosed() || r.live(c).isClosed() {
		t.Fatal("an agent within the budget was stopped")
	}
	r.svc.pool().available = func() int64 { return 1 }
	r.svc.pool().limits.HostMinAvailable = 2
	_, d := r.run("s4", "default", nil)
	waitFor(t, "every agent stopped when the host is short of memory", func() bool {
		return r.live(b).isClosed() && r.live(c).isClosed() && r.live(d).isClosed()
	})
}

// With no limits set nothing is kept.
func TestWarmOff(t *testing.T) {
	r := newWarmRig(t, WarmLimits{})
	_, a := r.run("s1", "default", nil)
	if !r.live(a).isClosed() {
		t.Fatal("kept with warm agents off")
	}
	if res, _ := r.run("s1", "default", nil); res.Warm {
		t.Fatal("ran warm with warm agents off")
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countHolder counts the holds on the executor.
type countHolder struct{ n atomic.Int64 }

func (h *countHolder) Hold() func() {
	h.n.Add(1)
	var once sync.Once
	return func() { once.Do(func() { h.n.Add(-1) }) }
}

// A warm Claude Code that refuses the switch to the prompt's mode: the
// prompt runs cold in that mode on a resume of the session, reported
// once, nothing of it lost (a stand-in CLI logs its command lines and the
// prompts it got).
func TestWarmClaudeModeRefused(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	bin := filepath.Join(dir, "claude")
	script := `#!/bin/sh
echo "args $*" >>"$FAKE_LOG"
while read -r line; do
	case "$line" in
	*set_permission_mode*)
		id=$(echo "$line" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
		echo '{"type":"control_response","response":{"subtype":"error","request_id":"'"$id"'","error":"not on this process"}}';;
	*'"type":"user"'*)
		echo "prompt $$ $line" >>"$FAKE_LOG"
		echo '{"type":"system","subtype":"init","session_id":"fake-1"}'
		echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"from '$$'"}]}}'
		echo '{"type":"result","subtype":"success","session_id":"fake-1","usage":{}}';;
	esac
done
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &daemonSide{key: "k"}
	conn, _, _ := setupService(t, d, func(s *Service) {
		s.Agents = Agents{"claude-code": {Binary: bin, Env: map[string]string{"FAKE_LOG": log}}}
		s.Warm = roomy
	})
	run := func(task, text, mode string) protocol.ExecutePromptResult {
		p := prompt(task, text)
		p["agentic_tool"], p["permission_mode"] = "claude-code", mode
		var res protocol.ExecutePromptResult
		if err := conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("t1", "first", "default"); res.Status != "completed" || res.Warm {
		t.Fatalf("first prompt: %+v", res)
	}
	res := run("t2", "second", "plan")
	if res.Status != "completed" || res.Warm || res.AgentSessionID != "fake-1" {
		t.Fatalf("prompt after the refused switch: %+v, want completed cold on fake-1", res)
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "--permission-mode default") || strings.Contains(lines[0], "--resume") ||
		!strings.Contains(lines[2], "--permission-mode plan --resume fake-1") || !strings.Contains(lines[3], `"text":"second"`) {
		t.Fatalf("the CLI's log:\n%s\nwant a start, the first prompt, a start in plan resuming fake-1, the second prompt", b)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var texts []string
	for _, m := range d.events {
		if m.TaskID == "t2" && m.EventType == protocol.EventTextDelta {
			texts = append(texts, m.Event.Data["text"].(string))
		}
	}
	if len(texts) != 1 || !strings.Contains(lines[3], "prompt "+strings.TrimPrefix(texts[0], "from ")+" ") {
		t.Fatalf("t2's text %q, want the one answer of the new process", texts)
	}
}
