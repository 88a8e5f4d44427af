package meter

import (
	"context"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/gateway"
)

// A task signing in with its person's own subscription: the token is
// checked exactly as for the daemon's keys (each forgery refused), no
// key is granted, her budget (the operator's spend) does not stop it,
// and its ledger row is counted but costs nothing.
func TestAuthorizeOwn(t *testing.T) {
	w := newWorld(t)
	w.cfg.Budgets.Users = map[string]config.BudgetSet{"alice": {MonthTokens: 1}}
	tok := w.m.Signer.Token("t-s-alice", "s-alice", alice)
	for name, c := range map[string]struct {
		ctx context.Context
		tok string
	}{
		"from bob's executor": {from(bob), tok},
		"after its task":      {from(alice), w.m.Signer.Token("t-s-done", "s-done", alice)},
		"tampered":            {from(alice), strings.Replace(tok, "s-alice", "s-bob", 1)},
		"no peer":             {context.Background(), tok},
	} {
		if g, err := w.m.AuthorizeOwn(c.ctx, gateway.Anthropic, "", c.tok); err == nil || g.Own {
			t.Errorf("%s: granted %+v", name, g)
		}
	}
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", API: gateway.Anthropic, Model: "stand-in", Usage: gateway.Usage{Input: 5}, Status: 200, Ended: w.m.now()})
	g, err := w.m.AuthorizeOwn(from(alice), gateway.Anthropic, "", tok)
	if err != nil || !g.Own || g.Key != "" || g.Task != "t-s-alice" {
		t.Fatalf("own sign-in over budget: %+v, %v; want granted, no key", g, err)
	}
	if _, err := w.m.Authorize(from(alice), gateway.Anthropic, tok); err == nil {
		t.Fatal("the daemon's key granted over budget")
	}
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", API: gateway.Anthropic, Model: "stand-in", Usage: gateway.Usage{Input: 1_000_000}, Status: 200, Ended: w.m.now(), Own: true})
	rows, err := w.db.TaskSpend("t-s-alice")
	if err != nil || len(rows) != 2 || rows[1].Input != 1_000_000 || rows[1].CostMicros != 0 {
		t.Fatalf("ledger %+v, %v; want the own request counted at no cost", rows, err)
	}
}
