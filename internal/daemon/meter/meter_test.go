package meter

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/peer"
)

const alice, bob = 1001, 1002

type world struct {
	m   *Meter
	db  *store.DB
	cfg config.Gateway
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "agor.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	creds, err := credstore.Open(filepath.Join(dir, "credentials"), make([]byte, credstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.Set(credstore.Daemon, "ANTHROPIC_API_KEY", "sk-daemon"); err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, cfg: config.DefaultGateway()}
	w.cfg.Upstreams["anthropic"] = "http://127.0.0.1:9/anthropic"
	w.cfg.Prices["stand-in"] = config.Price{Input: 1, Output: 10}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	w.m = &Meter{Signer: NewSigner(make([]byte, 32)), Store: db, Keys: creds, Config: func() config.Gateway { return w.cfg },
		InGroup: func(string, string) (bool, error) { return false, nil }, Now: func() time.Time { return now }}
	for _, s := range []struct {
		id, user string
		uid      int64
		status   store.TaskStatus
	}{{"s-alice", "alice", alice, store.Running}, {"s-bob", "bob", bob, store.Running}, {"s-done", "alice", alice, store.Completed}} {
		if _, err := db.CreateSession(store.Session{ID: s.id, UnixUser: s.user, UID: s.uid, AgenticTool: "claude-code"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateTask(store.Task{ID: "t-" + s.id, SessionID: s.id, UnixUser: s.user, UID: s.uid, Prompt: "p", Status: s.status}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func from(uid uint32) context.Context {
	return peer.NewContext(context.Background(), peer.Cred{UID: uid, GID: uid})
}

// A session's token, relayed by its person's executor while a task of the
// session runs, gets the daemon's key and the configured upstream.
func TestAuthorizeLiveSession(t *testing.T) {
	w := newWorld(t)
	g, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Signer.Token("t-s-alice", "s-alice", alice))
	if err != nil {
		t.Fatal(err)
	}
	if g.Key != "sk-daemon" || g.Task != "t-s-alice" || g.Person != "alice" || g.Agent != "claude-code" || g.Upstream.String() != "http://127.0.0.1:9/anthropic" {
		t.Fatalf("grant %+v", g)
	}
}

// Forgeries: a token this daemon did not sign, one relayed by another
// person's executor, one whose session has no running task (used after
// its task), one naming another uid than it was made for.
func TestAuthorizeRefusesForgeries(t *testing.T) {
	w := newWorld(t)
	tok := w.m.Signer.Token("t-s-alice", "s-alice", alice)
	cases := []struct {
		name string
		ctx  context.Context
		tok  string
	}{
		{"another daemon's", from(alice), NewSigner([]byte("other")).Token("t-s-alice", "s-alice", alice)},
		{"tampered", from(alice), strings.Replace(tok, "s-alice", "s-bob", 1)},
		{"from bob's executor", from(bob), tok},
		{"made for bob, used on alice's session", from(bob), w.m.Signer.Token("t-s-alice", "s-alice", bob)},
		{"after its task", from(alice), w.m.Signer.Token("t-s-done", "s-done", alice)},
		// A pre-warmed agent's: its session id reserved, no session yet.
		{"for a session not made yet (pre-warmed)", from(alice), w.m.Signer.Token("t-s-reserved-not-made", "s-reserved-not-made", alice)},
		{"no peer", context.Background(), tok},
		{"the real key", from(alice), "sk-daemon"},
	}
	for _, c := range cases {
		if g, err := w.m.Authorize(c.ctx, gateway.Anthropic, c.tok); err == nil || g.Key != "" {
			t.Errorf("%s: granted %+v", c.name, g)
		}
	}
}

// Past her budget a person is refused in the words the issue asks for;
// another person goes on; raising the budget lets her continue.
func TestBudgetRefusesAndRaising(t *testing.T) {
	w := newWorld(t)
	w.cfg.Budgets.Users = map[string]config.BudgetSet{"alice": {MonthCost: 20}}
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", Session: "s-alice", API: gateway.Anthropic, Model: "stand-in",
		Usage: gateway.Usage{Input: 10_000_000, Output: 1_000_000}, Status: 200, Ended: w.m.now()}) // 10 + 10 = 20.00
	_, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Signer.Token("t-s-alice", "s-alice", alice))
	var r *gateway.Refusal
	if !errors.As(err, &r) || r.Message != "agor: monthly budget of 20.00 USD reached, resets 2026-12-01" {
		t.Fatalf("alice over budget: %v", err)
	}
	if _, err := w.m.Authorize(from(bob), gateway.Anthropic, w.m.Signer.Token("t-s-bob", "s-bob", bob)); err != nil {
		t.Fatalf("bob refused: %v", err)
	}
	w.cfg.Budgets.Users["alice"] = config.BudgetSet{MonthCost: 40}
	if _, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Signer.Token("t-s-alice", "s-alice", alice)); err != nil {
		t.Fatalf("alice refused after her budget was raised: %v", err)
	}
	st, _ := w.m.Standings("alice")
	if len(st) != 1 || st[0].Spent != 20 || st[0].Fraction() != 0.5 {
		t.Fatalf("standings %+v", st)
	}
}

// Record writes the provider's counts and the priced cost.
func TestRecordLedger(t *testing.T) {
	w := newWorld(t)
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", Session: "s-alice", Agent: "claude-code", API: gateway.Anthropic,
		Model: "stand-in", Usage: gateway.Usage{Input: 120, Output: 17, CacheRead: 30, CacheWrite: 8}, Status: 200, Streamed: true, Ended: w.m.now()})
	rows, err := w.db.TaskSpend("t-s-alice")
	if err != nil || len(rows) != 1 {
		t.Fatalf("%+v %v", rows, err)
	}
	r := rows[0]
	if r.Input != 120 || r.Output != 17 || r.CacheRead != 30 || r.CacheWrite != 8 || r.CostMicros != 120+170 || r.UID != alice || !r.Streamed {
		t.Fatalf("row %+v", r)
	}
}

// At 80% of a bound the task's person is told once (per task, period
// and kind), in words that say how much and when it resets.
func TestBudgetNearlyNotice(t *testing.T) {
	w := newWorld(t)
	w.cfg.Budgets.Users = map[string]config.BudgetSet{"alice": {MonthCost: 20}}
	told := make(chan string, 4)
	w.m.Notice = func(person, task, msg string) { told <- person + " " + task + ": " + msg }
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", Session: "s-alice", API: gateway.Anthropic, Model: "stand-in",
		Usage: gateway.Usage{Input: 16_100_000}, Status: 200, Ended: w.m.now()}) // 16.10 of 20.00
	tok := w.m.Signer.Token("t-s-alice", "s-alice", alice)
	for range 2 {
		if _, err := w.m.Authorize(from(alice), gateway.Anthropic, tok); err != nil {
			t.Fatal(err)
		}
	}
	want := "alice t-s-alice: agor: 80% of the monthly budget of 20.00 USD is spent (16.10 USD), resets 2026-12-01"
	select {
	case got := <-told:
		if got != want {
			t.Fatalf("told %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nobody was told")
	}
	select {
	case got := <-told:
		t.Fatalf("told twice: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
}
