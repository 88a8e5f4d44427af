package meter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/gateway"
)

// What /v1/usage shows of a budget: a standing per bound set, each
// resetting at its period's end, and the currency the configuration
// says now (read again when it changes).
func TestStandingsReport(t *testing.T) {
	w := newWorld(t)
	w.cfg.Budgets.Default = config.BudgetSet{DayTokens: 1000, MonthCost: 5}
	w.m.Record(gateway.Entry{Person: "alice", Task: "t-s-alice", Session: "s-alice", API: gateway.Anthropic, Model: "stand-in",
		Usage: gateway.Usage{Input: 100_000, Output: 20}, Status: 200, Ended: w.m.now()}) // 0.1 + 0.0002
	st, err := w.m.Standings("alice")
	if err != nil {
		t.Fatal(err)
	}
	want := []Standing{
		{Period: "day", Kind: "tokens", Spent: 100_020, Bound: 1000, ResetsAt: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)},
		{Period: "month", Kind: "cost", Spent: 0.1002, Bound: 5, ResetsAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("standings (-want +got):\n%s", d)
	}
	if w.m.Currency() != "USD" {
		t.Errorf("currency %q", w.m.Currency())
	}
	w.cfg.Currency = "EUR"
	if w.m.Currency() != "EUR" {
		t.Errorf("currency %q after a reload", w.m.Currency())
	}
}
