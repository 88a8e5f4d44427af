package task

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Prepare makes the fake a Preparer: a process that has run no turn; a
// session named in fakeHandshakes holds its first turn until closed.
func (warmFake) Prepare(_ context.Context, req agent.Request) (agent.Live, error) {
	holdPrepare(req.SessionID)
	l := newFakeLive(req)
	if g, ok := fakeHandshakes.Load(req.SessionID); ok {
		l.ready = g.(chan struct{})
	}
	return l, nil
}

var fakeHandshakes sync.Map // session → chan struct{}

// A second fake tool, for a prompt of another tool than the pre-warm's.
func init() { agent.Register("fakewarm-b", warmFake{}) }

var prewarmLimits = WarmLimits{Idle: time.Minute, PerUser: 4, PrewarmIdle: time.Minute}

// newPrewarmRig is a warm rig whose executor has a gateway socket (the
// relay is only dialled by an agent, which the fake never does) and a
// sandbox policy.
func newPrewarmRig(t *testing.T, l WarmLimits) *warmRig {
	return newWarmRig(t, l, func(s *Service) {
		s.GatewaySocket = filepath.Join(t.TempDir(), "gateway.sock")
		s.Sandbox = &sandbox.Policy{Self: os.Args[0], TempDir: t.TempDir()}
	})
}

// aliceOpts are the options pre-warmed for, as execute_prompt's extras.
func aliceOpts() map[string]any {
	return map[string]any{"session_id": "s1", "agentic_tool": "fakewarm", "cwd": "work",
		"permission_mode": "default", "sandbox": "off", "gateway": true, "gateway_token": "gw.t1.s1.1001"}
}

func (r *warmRig) prewarm(opts map[string]any) (protocol.PrewarmAgentResult, error) {
	var res protocol.PrewarmAgentResult
	err := r.conn.Call(context.Background(), protocol.MethodPrewarmAgent, opts, &res)
	return res, err
}

// mustPrewarm pre-warms opts and returns the process.
func (r *warmRig) mustPrewarm(opts map[string]any) *fakeLive {
	r.t.Helper()
	res, err := r.prewarm(opts)
	if err != nil || !res.Started {
		r.t.Fatalf("prewarm_agent: %+v %v", res, err)
	}
	r.svc.pool().mu.Lock()
	defer r.svc.pool().mu.Unlock()
	a := r.svc.pool().agents[keyOf(opts["session_id"].(string), opts["agentic_tool"].(string))]
	return a.live.(*fakeLive)
}

// prompt runs a prompt of opts (with over's changes).
func (r *warmRig) prompt(opts, over map[string]any) (protocol.ExecutePromptResult, *fakeLive) {
	r.t.Helper()
	extra := maps.Clone(opts)
	maps.Copy(extra, over)
	res, text := r.run(extra["session_id"].(string), extra["permission_mode"].(string), extra)
	return res, r.live(text)
}

// A pre-warmed agent takes a prompt only when every option is the one it
// was started with; any other prompt runs on a process of its own, and
// a pre-warm of the same session and tool is stopped, never switched.
func TestPrewarmUsedOnlyWhenAllMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		pre, over map[string]any
		same      bool // the pre-warm's key: it is stopped on a mismatch
		match     bool // a change that is no mismatch
	}{
		{name: "match", same: true},
		{name: "another cwd", over: map[string]any{"cwd": "work/sub"}, same: true},
		{name: "another sandbox level", over: map[string]any{"sandbox": "workspace"}, same: true},
		{name: "another mode", over: map[string]any{"permission_mode": "plan"}, same: true},
		{name: "another mode, live-switching agent", pre: map[string]any{"model": "mode-live"},
			over: map[string]any{"permission_mode": "plan"}, same: true},
		{name: "another model", over: map[string]any{"model": "other"}, same: true},
		{name: "another model, live-switching agent", pre: map[string]any{"model": "mode-live"},
			over: map[string]any{"model": "other"}, same: true},
		// The task's credential is not in the agent's environment: each
		// prompt's is its own, and the pre-warm (which has none) is used.
		{name: "another credential", over: map[string]any{"gateway_token": "gw.t9.s1.1001"}, match: true},
		{name: "another tool", over: map[string]any{"agentic_tool": "fakewarm-b"}},
		{name: "another session", over: map[string]any{"session_id": "s2", "gateway_token": "gw.s2.1001"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newPrewarmRig(t, prewarmLimits)
			if err := os.Mkdir(filepath.Join(r.cwd, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			opts := aliceOpts()
			maps.Copy(opts, c.pre)
			pre := r.mustPrewarm(opts)
			res, got := r.prompt(opts, c.over)
			match := c.over == nil || c.match
			if (got == pre) != match || res.Prewarmed != match || res.Warm {
				t.Fatalf("prompt ran on pid %d (pre-warmed %d): %+v", got.pid, pre.pid, res)
			}
			if !match && c.same {
				waitFor(t, "the unused pre-warm stopped", pre.isClosed)
			}
			if res, again := r.prompt(opts, c.over); !res.Warm || res.Prewarmed || again != got {
				t.Fatalf("follow-up: %+v on %d, want warm on %d", res, again.pid, got.pid)
			}
		})
	}
}

// An unused pre-warm is stopped after PrewarmIdle, and releases the
// executor's hold; the prompt after it runs cold.
func TestPrewarmIdleBound(t *testing.T) {
	t.Parallel()
	l := prewarmLimits
	l.PrewarmIdle = 50 * time.Millisecond
	r := newPrewarmRig(t, l)
	pre := r.mustPrewarm(aliceOpts())
	waitFor(t, "the pre-warm expired", pre.isClosed)
	waitFor(t, "the hold released", func() bool { return r.holds.n.Load() == 0 && r.svc.pool().len() == 0 })
	if res, got := r.prompt(aliceOpts(), nil); res.Prewarmed || got == pre {
		t.Fatalf("after expiry: %+v on %d", res, got.pid)
	}
}

// No pre-warm unless the daemon says the gateway serves it (the raw key
// is given to tasks only), nor with pre-warming off, nor without the
// gateway's socket.
func TestPrewarmRefusedWithoutGateway(t *testing.T) {
	t.Parallel()
	r := newPrewarmRig(t, prewarmLimits)
	opts := aliceOpts()
	delete(opts, "gateway_token")
	delete(opts, "gateway")
	var rerr *rpc.Error
	if _, err := r.prewarm(opts); !errors.As(err, &rerr) || rerr.Code != rpc.CodeInvalidParams || r.svc.pool().len() != 0 {
		t.Fatalf("without the gateway: %v, %d agents", err, r.svc.pool().len())
	}
	off := prewarmLimits
	off.PrewarmIdle = 0
	if res, err := newPrewarmRig(t, off).prewarm(aliceOpts()); err != nil || res.Started || res.Reason != protocol.PrewarmOff {
		t.Fatalf("pre-warming off: %+v %v", res, err)
	}
	if res, err := newWarmRig(t, prewarmLimits).prewarm(aliceOpts()); err != nil || res.Started || res.Reason != protocol.PrewarmFailed {
		t.Fatalf("no gateway socket: %+v %v", res, err)
	}
}

// A prompt that comes while the pre-warmed agent's handshake still runs
// waits for it and runs on it.
func TestPrewarmPromptDuringHandshake(t *testing.T) {
	t.Parallel()
	r := newPrewarmRig(t, prewarmLimits)
	gate := make(chan struct{})
	opts := aliceOpts()
	opts["session_id"], opts["gateway_token"] = "s-handshake", "gw.sh.1001"
	fakeHandshakes.Store("s-handshake", gate)
	pre := r.mustPrewarm(opts)
	done := make(chan *fakeLive)
	go func() {
		res, got := r.prompt(opts, nil)
		if !res.Prewarmed {
			got = nil
		}
		done <- got
	}()
	select {
	case <-done:
		t.Fatal("the turn ran before the handshake was over")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	if got := <-done; got != pre {
		t.Fatalf("the prompt did not run on the pre-warm %d", pre.pid)
	}
}

// The pre-warm is reported to the daemon as prewarmed, is refused a
// second time, and release_warm_agent (the host cap) stops it.
func TestPrewarmReported(t *testing.T) {
	t.Parallel()
	r := newPrewarmRig(t, prewarmLimits)
	pre := r.mustPrewarm(aliceOpts())
	set := r.waitReported("the pre-warm", "s1")
	if !set[0].Prewarmed || set[0].Tool != "fakewarm" {
		t.Fatalf("report %+v", set)
	}
	if res, err := r.prewarm(aliceOpts()); err != nil || res.Reason != protocol.PrewarmAlreadyWarm {
		t.Fatalf("second pre-warm: %+v %v", res, err)
	}
	var rel protocol.ReleaseWarmAgentResult
	if err := r.conn.Call(context.Background(), protocol.MethodReleaseWarmAgent,
		protocol.ReleaseWarmAgentParams{SessionID: "s1", Tool: "fakewarm"}, &rel); err != nil || !rel.Released {
		t.Fatalf("release: %+v %v", rel, err)
	}
	waitFor(t, "the released pre-warm stopped", pre.isClosed)
	r.waitReported("released")
}

// A pre-warm never evicts an agent that ran a turn: beyond warm_per_user
// it evicts older unused pre-warms only, else it is refused.
func TestPrewarmNeverEvictsUsed(t *testing.T) {
	t.Parallel()
	l := prewarmLimits
	l.PerUser = 2
	r := newPrewarmRig(t, l)
	_, used := r.run("u1", "default", nil)
	opts := func(s string) map[string]any {
		o := aliceOpts()
		o["session_id"], o["gateway_token"] = s, "gw."+s
		return o
	}
	first := r.mustPrewarm(opts("p1"))
	second := r.mustPrewarm(opts("p2"))
	waitFor(t, "the older pre-warm evicted", first.isClosed)
	_, used2 := r.run("u2", "default", nil) // a used agent evicts the pre-warm
	waitFor(t, "the pre-warm evicted by a used agent", second.isClosed)
	if res, err := r.prewarm(opts("p3")); err != nil || res.Started || res.Reason != protocol.PrewarmNoRoom {
		t.Fatalf("with only used agents: %+v %v", res, err)
	}
	if r.live(used).isClosed() || r.live(used2).isClosed() || r.svc.pool().len() != 2 {
		t.Fatalf("a used agent was evicted for a pre-warm")
	}
}

// Memory: a pre-warm that fits only by evicting a used agent is refused;
// the used agent stays. Within the budget it is kept, and the next used
// agent evicts it first.
func TestPrewarmMemoryBudget(t *testing.T) {
	t.Parallel()
	l := prewarmLimits
	l.MemoryBytes = 250
	r := newPrewarmRig(t, l)
	r.svc.pool().rss = func(int) int64 { return 100 }
	_, used := r.run("u1", "default", nil)
	opts := aliceOpts()
	pre := r.mustPrewarm(opts) // 200 of 250
	_, used2 := r.run("u2", "default", nil)
	waitFor(t, "the pre-warm evicted first", pre.isClosed)
	opts["session_id"], opts["gateway_token"] = "s2", "gw.s2"
	if res, err := r.prewarm(opts); err != nil || res.Reason != protocol.PrewarmNoRoom {
		t.Fatalf("over the budget: %+v %v", res, err)
	}
	if r.live(used).isClosed() || r.live(used2).isClosed() || r.svc.pool().len() != 2 {
		t.Fatal("a used agent was evicted for a pre-warm")
	}
}
