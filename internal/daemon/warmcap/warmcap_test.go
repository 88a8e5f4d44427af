package warmcap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// fakeExec is one executor's connection: it records what it is asked to
// release, and can be gone.
type fakeExec struct {
	mu    sync.Mutex
	asked []string // the sessions asked back
	gone  bool
	block chan struct{} // when set, calls wait for it
}

func (f *fakeExec) Call(_ context.Context, method string, params, result any) error {
	if f.block != nil {
		<-f.block
	}
	p := params.(protocol.ReleaseWarmAgentParams)
	f.mu.Lock()
	f.asked = append(f.asked, p.SessionID)
	f.mu.Unlock()
	if method != protocol.MethodReleaseWarmAgent || p.Reason != "host cap" {
		return rpc.Errorf(rpc.CodeMethodNotFound, "method_not_found", "%s %+v", method, p)
	}
	*result.(*protocol.ReleaseWarmAgentResult) = protocol.ReleaseWarmAgentResult{Released: true}
	return nil
}

func (f *fakeExec) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return rpc.ErrClosed
	}
	return nil
}

func (f *fakeExec) released() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// agents parses "s1@100 s2@200p" (session@last_used_ms, p: pre-warmed).
func agents(s string) []protocol.WarmAgent {
	var out []protocol.WarmAgent
	for _, f := range strings.Fields(s) {
		id, at, _ := strings.Cut(f, "@")
		at, pre := strings.CutSuffix(at, "p")
		var ms int64
		for _, d := range at {
			ms = ms*10 + int64(d-'0')
		}
		out = append(out, protocol.WarmAgent{SessionID: id, Tool: protocol.ToolClaudeCode, LastUsedMS: ms, Prewarmed: pre})
	}
	return out
}

// step is one report (or, with gone, an executor going away).
type step struct {
	user, agents string
	gone         bool
}

func TestCap(t *testing.T) {
	cases := []struct {
		name  string
		max   int
		steps []step
		want  map[string][]string // sessions each user's executor was asked to release
		held  int
	}{
		{"within the cap", 4, []step{{user: "alice", agents: "a1@100 a2@200"}, {user: "bob", agents: "b1@150 b2@300"}}, nil, 4},
		{"least recently used across users", 3,
			[]step{{user: "alice", agents: "a1@100 a2@400"}, {user: "bob", agents: "b1@200 b2@300"}},
			map[string][]string{"alice": {"a1"}}, 4},
		{"oldest first until within the cap", 1,
			[]step{{user: "alice", agents: "a1@100"}, {user: "bob", agents: "b1@300 b2@200"}},
			map[string][]string{"alice": {"a1"}, "bob": {"b2"}}, 3},
		{"a new report replaces the old", 2,
			[]step{{user: "alice", agents: "a1@100 a2@200"}, {user: "alice", agents: "a2@200"}, {user: "bob", agents: "b1@300"}},
			nil, 2},
		{"ties: the user holding more gives first", 2,
			[]step{{user: "alice", agents: "a1@100"}, {user: "bob", agents: "b2@100 b1@100"}},
			map[string][]string{"bob": {"b1"}}, 3},
		{"ties between equals: by name", 1,
			[]step{{user: "bob", agents: "b1@100"}, {user: "alice", agents: "a1@100"}},
			map[string][]string{"alice": {"a1"}}, 2},
		{"an executor gone takes its agents out of the count", 2,
			[]step{{user: "alice", agents: "a1@100 a2@200"}, {user: "alice", gone: true}, {user: "bob", agents: "b1@300 b2@400"}},
			nil, 2},
		{"unused pre-warms first, however recent", 2,
			[]step{{user: "alice", agents: "a1@100 a2@200"}, {user: "bob", agents: "b1@300p"}},
			map[string][]string{"bob": {"b1"}}, 3},
		{"pre-warms among themselves: oldest first", 2,
			[]step{{user: "alice", agents: "a1@100 a2@400p"}, {user: "bob", agents: "b1@300p"}},
			map[string][]string{"bob": {"b1"}}, 3},
		{"no cap", 0, []step{{user: "alice", agents: "a1@1 a2@2 a3@3"}}, nil, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cap{Max: tc.max, PerUser: 4}
			execs := map[string]*fakeExec{}
			for _, s := range tc.steps {
				if execs[s.user] == nil {
					execs[s.user] = &fakeExec{}
				}
				if s.gone {
					execs[s.user].gone = true
					continue
				}
				c.Update(s.user, execs[s.user], agents(s.agents))
			}
			c.Wait()
			got := map[string][]string{}
			for user, ex := range execs {
				if r := ex.released(); len(r) > 0 {
					got[user] = r
				}
			}
			if tc.want == nil {
				tc.want = map[string][]string{}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("released (-want +got):\n%s", d)
			}
			if n := heldBy(c); n != tc.held {
				t.Errorf("held %d, want %d (as reported: releases show in the next report)", n, tc.held)
			}
		})
	}
}

// A release in flight is not asked again by the reports that arrive
// before its answer, and the connection of a gone executor is let go.
func TestCapAsksOnce(t *testing.T) {
	c := &Cap{Max: 1, PerUser: 4}
	alice := &fakeExec{block: make(chan struct{})}
	c.Update("alice", alice, agents("a1@100"))
	c.Update("bob", &fakeExec{}, agents("b1@200"))
	c.Update("bob", &fakeExec{}, agents("b1@300"))
	if !c.Keep("alice") || !c.Keep("bob") || c.Keep("carol") {
		t.Error("Keep: want alice's and bob's connections kept, carol has none")
	}
	close(alice.block)
	c.Wait()
	if got := alice.released(); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("alice asked %v, want a1 once", got)
	}
	alice.gone = true
	if c.Keep("alice") {
		t.Error("Keep: alice's executor is gone")
	}
	if (&Cap{}).Keep("bob") {
		t.Error("Keep with no cap: nothing to ask back")
	}
}

// heldBy is how many warm agents the host holds, as c has them reported.
func heldBy(c *Cap) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.liveLocked())
}

// A report is its executor's user's word, and that user can forge it
// (the executor runs as them). However many agents it lists and however
// late it says they were used, it counts for that user's share only: at
// most PerUser agents, used no later than the report came in.
func TestForgedWarmReport(t *testing.T) {
	now := time.Now().UnixMilli()
	future := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "f%d@%d ", i, now+3_600_000+int64(i))
		}
		return b.String()
	}
	t.Run("more than the per-user cap", func(t *testing.T) {
		c := &Cap{Max: 6, PerUser: 2}
		bob, carol, alice := &fakeExec{}, &fakeExec{}, &fakeExec{}
		c.Update("bob", bob, agents("b1@100 b2@200"))
		c.Update("carol", carol, agents("c1@150 c2@250"))
		c.Update("alice", alice, agents(future(16)))
		c.Wait()
		if r := append(bob.released(), carol.released()...); len(r) > 0 {
			t.Errorf("alice's forged report of 16 released others' agents: %v", r)
		}
		if n := len(c.Of("alice")); n != 2 {
			t.Errorf("alice's report counts %d agents, want the per-user cap 2", n)
		}
	})
	t.Run("used in the future", func(t *testing.T) {
		c := &Cap{Max: 1, PerUser: 4}
		bob, alice := &fakeExec{}, &fakeExec{}
		c.Update("alice", alice, agents(future(1)))
		time.Sleep(5 * time.Millisecond)
		c.Update("bob", bob, agents(fmt.Sprintf("b1@%d", time.Now().UnixMilli())))
		c.Wait()
		if r := bob.released(); len(r) > 0 {
			t.Errorf("bob's agent, used after alice's report came in, was released: %v", r)
		}
		if r := alice.released(); !slices.Equal(r, []string{"f0"}) {
			t.Errorf("alice asked %v, want f0 (the least recently used once clamped to its report's time)", r)
		}
	})
}
