package task

import (
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
)

// The fake's stand-in for an agent's hold on its session (codex's
// writer lock on the thread): a process started for a session while an
// earlier one of the session is not yet gone is counted in fakeOverlaps.
var (
	fakeWriters   sync.Map // session → *fakeLive, the last started
	fakeOverlaps  sync.Map // session → the pids of the process it met
	fakeSlowClose sync.Map // session → time.Duration its processes take to exit
	fakePrepares  sync.Map // session → prepareGate: its pre-warm's start waits
)

type prepareGate struct{ entered, release chan struct{} }

func newFakeLive(req agent.Request) *fakeLive {
	l := &fakeLive{pid: int(fakePids.Add(1)), modeLive: req.Model == "mode-live", session: req.SessionID}
	fakeLives.Store(l.pid, l)
	if old, ok := fakeWriters.Swap(req.SessionID, l); ok && !old.(*fakeLive).isClosed() {
		fakeOverlaps.Store(req.SessionID, [2]int{old.(*fakeLive).pid, l.pid})
	}
	return l
}

// slowClose is an agent writing its session before it exits.
func (l *fakeLive) slowClose() {
	if d, ok := fakeSlowClose.Load(l.session); ok {
		time.Sleep(d.(time.Duration))
	}
}

// holdPrepare holds a pre-warm of session in its start until released.
func holdPrepare(session string) {
	if g, ok := fakePrepares.Load(session); ok {
		close(g.(prepareGate).entered)
		<-g.(prepareGate).release
	}
}

func noOverlap(t *testing.T, session string) {
	t.Helper()
	if pids, ok := fakeOverlaps.Load(session); ok {
		t.Fatalf("session %s: process %d started while %d was still there", session, pids.([2]int)[1], pids.([2]int)[0])
	}
}

// A session's process that is stopped for a prompt (another mode, an
// unused pre-warm of other options) is gone before the prompt's own
// starts: the new process resumes what the old one wrote, and codex
// refuses a second writer of one thread. Shown failing with the stop
// left to run beside the new start.
func TestWarmReplacedProcessGoneFirst(t *testing.T) {
	t.Parallel()
	t.Run("settings changed", func(t *testing.T) {
		t.Parallel()
		fakeSlowClose.Store("ov1", 300*time.Millisecond)
		r := newWarmRig(t, roomy)
		_, first := r.run("ov1", "default", nil)
		if res, second := r.run("ov1", "bypassPermissions", nil); res.Warm || r.live(second) == r.live(first) {
			t.Fatalf("the mode change ran on the old process: %+v", res)
		}
		noOverlap(t, "ov1")
	})
	t.Run("pre-warm unused", func(t *testing.T) {
		t.Parallel()
		fakeSlowClose.Store("ov2", 300*time.Millisecond)
		r := newPrewarmRig(t, prewarmLimits)
		opts := aliceOpts()
		opts["session_id"], opts["gateway_token"] = "ov2", "gw.ov2.1001"
		pre := r.mustPrewarm(opts)
		if res, got := r.prompt(opts, map[string]any{"permission_mode": "plan"}); res.Prewarmed || got == pre {
			t.Fatalf("another mode ran on the pre-warm: %+v", res)
		}
		noOverlap(t, "ov2")
	})
}

// A prompt that comes while its session's pre-warm is being started
// waits for it and runs on it, instead of starting a second process of
// the session beside it (the executor started by anything but a prompt
// pre-warms the session used last: systemctl restart, then a follow-up).
func TestPrewarmStartingMeetsPrompt(t *testing.T) {
	t.Parallel()
	r := newPrewarmRig(t, prewarmLimits)
	opts := aliceOpts()
	opts["session_id"], opts["gateway_token"] = "ov3", "gw.ov3.1001"
	gate := prepareGate{entered: make(chan struct{}), release: make(chan struct{})}
	fakePrepares.Store("ov3", gate)
	prewarmed := make(chan error, 1)
	go func() {
		res, err := r.prewarm(opts)
		if err == nil && !res.Started {
			t.Errorf("pre-warm: %+v", res)
		}
		prewarmed <- err
	}()
	<-gate.entered
	type ran struct {
		prewarmed bool
		live      *fakeLive
	}
	done := make(chan ran, 1)
	go func() {
		res, got := r.prompt(opts, nil)
		done <- ran{res.Prewarmed, got}
	}()
	time.Sleep(100 * time.Millisecond) // the prompt is in, and must wait
	close(gate.release)
	if err := <-prewarmed; err != nil {
		t.Fatal(err)
	}
	got := <-done
	noOverlap(t, "ov3")
	if !got.prewarmed {
		t.Fatalf("the prompt did not run on the pre-warm (pid %d)", got.live.pid)
	}
}
