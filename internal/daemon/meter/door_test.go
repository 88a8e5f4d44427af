package meter

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/store"
)

// A task's credential (what alice's executor's relay puts on her task's
// connections) is good for that task only, from her uid, while it runs;
// each other use is refused, and audited with the rule that refused it:
// from bob's executor, for her other session, for her ended task though
// its session runs on, after the session's last task ended, the old
// per-session kind, none at all, a forged one. Her other session's own
// credential serves that session's task, never this one's.
func TestDoorRefusesCredentialElsewhere(t *testing.T) {
	w := newWorld(t)
	trail := w.audited(t)
	// s-alice's first task ended; its second runs. s-alice2 is her other session.
	w.finish(t, "t-s-alice")
	for _, task := range []store.Task{{ID: "t2-s-alice", SessionID: "s-alice"}, {ID: "t-s-alice2", SessionID: "s-alice2"}} {
		task.UnixUser, task.UID, task.Prompt, task.Status = "alice", alice, "p", store.Running
		if task.SessionID == "s-alice2" {
			if _, err := w.db.CreateSession(store.Session{ID: "s-alice2", UnixUser: "alice", UID: alice, AgenticTool: "claude-code"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.db.CreateTask(task); err != nil {
			t.Fatal(err)
		}
	}
	live := w.m.Token("t2-s-alice", "s-alice", alice)
	cases := []struct {
		name, tok, reason string
		from              uint32
	}{
		{"from bob's executor", live, "relayed by another account (from uid 1002)", bob},
		{"her ended task's, its session running on", w.m.Token("t-s-alice", "s-alice", alice), "its task has ended (its session runs task t2-s-alice now)", alice},
		{"her live task's, named for her other session", w.m.Token("t2-s-alice", "s-alice2", alice), "its task has ended (its session runs task t-s-alice2 now)", alice},
		{"after its session's last task", w.m.Token("t-s-done", "s-done", alice), "its task has ended (no task of its session runs)", alice},
		{"the old per-session kind", "agor-gw1.s-alice.1001.x", "of the old kind", alice},
		{"none: not through a relay", "", "no credential", alice},
		{"forged", strings.Replace(live, "t2-s-alice", "t-s-alice2", 1), "not a credential this daemon signed", alice},
	}
	for _, c := range cases {
		if g, err := w.m.Authorize(from(c.from), gateway.Anthropic, c.tok); err == nil || g.Key != "" {
			t.Errorf("%s: granted %+v", c.name, g)
		}
	}
	if err := trail.Flush(); err != nil {
		t.Fatal(err)
	}
	recs := trail.Query(audit.Filter{Action: audit.GatewayRefused})
	for _, c := range cases {
		found := false
		for _, r := range recs {
			found = found || strings.Contains(r.Reason, c.reason)
		}
		if !found {
			t.Errorf("%s: no gateway_refused record saying %q in %+v", c.name, c.reason, recs)
		}
	}
	for _, ok := range []struct{ task, session string }{{"t2-s-alice", "s-alice"}, {"t-s-alice2", "s-alice2"}} {
		g, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Token(ok.task, ok.session, alice))
		if err != nil || g.Task != ok.task {
			t.Errorf("%s's own credential: %+v %v", ok.task, g, err)
		}
	}
	t.Logf("%d refusals, each audited: %d records", len(cases), len(recs))
}

func (w *world) finish(t *testing.T, task string) {
	t.Helper()
	if err := w.db.FinishTask(task, store.Finish{Status: store.Completed}); err != nil {
		t.Fatal(err)
	}
}

// With run_as_unix_user false, alice's task runs in the shared account's
// executor: its credential, made for that account's uid, is good from that
// account's relay only, and her own key is put on. From her own uid's relay
// (which does not run it) or bob's it is refused, and so is everything
// while the shared account cannot be looked up: no uid is taken on trust.
func TestDoorSharedAccount(t *testing.T) {
	const shared = 1500
	w := newWorld(t)
	keys := w.m.Keys.(*credstore.Store)
	if err := keys.Set(credstore.User("alice", alice), "ANTHROPIC_API_KEY", "sk-alice"); err != nil {
		t.Fatal(err)
	}
	var lookup error
	w.m.RunsAs = func(context.Context, store.Task) (int64, error) { return shared, lookup }
	g, err := w.m.Authorize(from(shared), gateway.Anthropic, w.m.Token("t-s-alice", "s-alice", shared))
	if err != nil || g.Person != "alice" || g.Key != "sk-alice" {
		t.Fatalf("her task's credential from the shared account's relay: %+v %v", g, err)
	}
	refused := []struct {
		name string
		tok  string
		from uint32
	}{
		{"made for her own uid, from her own relay", w.m.Token("t-s-alice", "s-alice", alice), alice},
		{"the shared account's, from bob's relay", w.m.Token("t-s-alice", "s-alice", shared), bob},
	}
	for _, c := range refused {
		if g, err := w.m.Authorize(from(c.from), gateway.Anthropic, c.tok); err == nil || g.Key != "" {
			t.Errorf("%s: granted %+v", c.name, g)
		}
	}
	lookup = errors.New("no such user")
	if g, err := w.m.Authorize(from(shared), gateway.Anthropic, w.m.Token("t-s-alice", "s-alice", shared)); err == nil || g.Key != "" {
		t.Errorf("the shared account not found: granted %+v", g)
	}
}

// audited gives w's meter an audit trail of its own, closed when the
// test ends, and returns it for the test to read back.
func (w *world) audited(t *testing.T) *audit.Logger {
	t.Helper()
	trail, err := audit.Open(audit.Options{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trail.Close() })
	w.m.Audit = trail
	return trail
}
