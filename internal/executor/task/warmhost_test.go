package task

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// reported is the last warm_agents report the daemon side received
// (nil: none yet).
func (r *warmRig) reported() []protocol.WarmAgent {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	if len(r.d.warm) == 0 {
		return nil
	}
	return r.d.warm[len(r.d.warm)-1]
}

func sessionsOf(set []protocol.WarmAgent) []string {
	out := []string{}
	for _, a := range set {
		out = append(out, a.SessionID)
	}
	return out
}

// waitReported waits for the last report to name exactly sessions.
func (r *warmRig) waitReported(what string, sessions ...string) []protocol.WarmAgent {
	r.t.Helper()
	var set []protocol.WarmAgent
	waitFor(r.t, fmt.Sprintf("%s: want %v", what, sessions), func() bool {
		set = r.reported()
		return set != nil && slices.Equal(sessionsOf(set), sessions)
	})
	return set
}

func (r *warmRig) release(session string, usedMS int64) bool {
	r.t.Helper()
	var res protocol.ReleaseWarmAgentResult
	p := protocol.ReleaseWarmAgentParams{SessionID: session, Tool: "fakewarm", LastUsedMS: usedMS, Reason: "host cap"}
	if err := r.conn.Call(context.Background(), protocol.MethodReleaseWarmAgent, p, &res); err != nil {
		r.t.Fatalf("release_warm_agent %s: %v", session, err)
	}
	return res.Released
}

// The pool tells the daemon its warm agents whenever they change (kept
// after a turn, taken for one), and release_warm_agent stops an idle one
// but not one running a turn, nor one used after the use the daemon saw.
func TestWarmReportAndRelease(t *testing.T) {
	r := newWarmRig(t, roomy)
	_, a := r.run("s1", "default", nil)
	set := r.waitReported("s1 reported kept", "s1")
	if set[0].Tool != "fakewarm" || set[0].LastUsedMS <= 0 {
		t.Fatalf("report %+v", set)
	}
	_, b := r.run("s2", "default", nil)
	set = r.waitReported("s2 reported kept, after s1", "s1", "s2")

	if !r.release("s1", set[0].LastUsedMS) {
		t.Fatal("idle s1 not released")
	}
	waitFor(t, "s1's process stopped", r.live(a).isClosed)
	r.waitReported("s1 reported gone", "s2")
	if r.release("s1", 0) || r.release("no-such-session", 0) {
		t.Fatal("released an agent that is not warm")
	}
	if r.release("s2", set[1].LastUsedMS-1) || r.live(b).isClosed() {
		t.Fatal("released s2 though it was used after the daemon's view")
	}

	// A turn on s2 takes its agent: reported, and not released under it.
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	fakeGates.Store("gated", gate)
	t.Cleanup(func() { open(); fakeGates.Delete("gated") }) // a failed test must not leave the turn hanging
	done := make(chan error, 1)
	go func() {
		p := prompt("t-gated", "gated")
		p["agentic_tool"], p["session_id"] = "fakewarm", "s2"
		var res protocol.ExecutePromptResult
		err := r.conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res)
		if err == nil && !res.Warm {
			err = fmt.Errorf("the turn did not run warm: %+v", res)
		}
		done <- err
	}()
	r.waitReported("s2 reported taken for its turn")
	if r.release("s2", 0) {
		t.Fatal("released the agent running a turn")
	}
	open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.waitReported("s2 reported kept again", "s2")
	if r.live(b).isClosed() {
		t.Fatal("the agent that ran the turn was stopped")
	}
}

// An idle stop and the executor's close are reported too.
func TestWarmReportIdleAndClose(t *testing.T) {
	r := newWarmRig(t, WarmLimits{Idle: 200 * time.Millisecond, PerUser: 4})
	r.run("s1", "default", nil)
	r.waitReported("s1 reported kept", "s1")
	r.waitReported("s1 reported stopped when idle")

	r = newWarmRig(t, roomy)
	r.run("s1", "default", nil)
	r.waitReported("s1 reported kept", "s1")
	r.run("s2", "default", nil)
	r.waitReported("s2 reported kept", "s1", "s2")
	r.svc.pool().close()
	r.waitReported("all reported stopped at close")
}
