package meter

import (
	"fmt"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/store"
)

// Standing is a person's spend against her budget in one period.
type Standing struct {
	Period string // "day" or "month"
	Kind   string // "cost" or "tokens"
	Spent  float64
	// Reserved is what her requests in flight hold: their worst case,
	// until their usage is in the ledger (Reserve).
	Reserved float64
	Bound    float64
	ResetsAt time.Time
}

// Left is what the bound leaves after what is spent and reserved.
func (s Standing) Left() float64 { return max(s.Bound-s.Spent-s.Reserved, 0) }

// Reached reports whether the bound is spent.
func (s Standing) Reached() bool { return s.Bound > 0 && s.Spent >= s.Bound }

// Fraction is how much of the bound is spent (0 with no bound).
func (s Standing) Fraction() float64 {
	if s.Bound <= 0 {
		return 0
	}
	return s.Spent / s.Bound
}

// Standings are user's spend, and her requests in flight's holds,
// against each bound her budget sets.
func (m *Meter) Standings(user string) ([]Standing, error) {
	cfg := m.Config()
	b, err := cfg.Budgets.For(user, func(g string) (bool, error) { return m.InGroup(user, g) })
	if err != nil || !b.Bounded() {
		return nil, err
	}
	// The holds first, then the ledger: a request's usage is in the
	// ledger before its hold is released (the gateway releases after
	// Record), so read in this order, a request settling meanwhile is
	// counted once or twice, never not at all.
	held := m.holds.of(user)
	now := m.now()
	var out []Standing
	for _, p := range []struct {
		name         string
		start, next  time.Time
		cost, tokens float64
	}{
		{"day", config.DayStart(now), config.DayStart(now).AddDate(0, 0, 1), b.DayCost, float64(b.DayTokens)},
		{"month", config.MonthStart(now), config.MonthStart(now).AddDate(0, 1, 0), b.MonthCost, float64(b.MonthTokens)},
	} {
		if p.cost <= 0 && p.tokens <= 0 {
			continue
		}
		totals, err := m.Store.SpendTotals(store.SpendFilter{User: user, Since: p.start})
		if err != nil {
			return nil, err
		}
		var micros, tokens int64
		for _, t := range totals {
			micros, tokens = micros+t.CostMicros, tokens+t.Tokens()
		}
		if p.cost > 0 {
			out = append(out, Standing{Period: p.name, Kind: "cost", Spent: float64(micros) / 1e6, Reserved: held.in("cost"),
				Bound: p.cost, ResetsAt: p.next})
		}
		if p.tokens > 0 {
			out = append(out, Standing{Period: p.name, Kind: "tokens", Spent: float64(tokens), Reserved: held.in("tokens"),
				Bound: p.tokens, ResetsAt: p.next})
		}
	}
	return out, nil
}

// overBudget is the refusal for a person whose budget is spent, or nil;
// with her standings. A ledger that cannot be read refuses too: a bound
// that cannot be checked is not waived.
func (m *Meter) overBudget(user string) ([]Standing, *gateway.Refusal) {
	st, err := m.Standings(user)
	if err != nil {
		m.log().Error("gateway: budget not checked", "user", user, "err", err)
		return nil, &gateway.Refusal{Status: 503, Message: "agor: the budget could not be checked; try again"}
	}
	for _, s := range st {
		if s.Reached() {
			msg := BudgetMessage(s, m.Config().Currency)
			if m.Audit != nil { // one record per person and bound, counted
				m.Audit.Aggregate(audit.Record{Action: audit.BudgetReached, User: user, Reason: msg})
			}
			return st, &gateway.Refusal{Status: 403, Message: msg}
		}
	}
	return st, nil
}

// WarnAt is the fraction of a bound past which a task is told.
const WarnAt = 0.8

// warnNearly tells task's person, once per task, period and kind, that
// a budget is WarnAt spent (through Notice: a notice event in the turn).
func (m *Meter) warnNearly(user, task string, st []Standing) {
	if m.Notice == nil {
		return
	}
	for _, s := range st {
		if s.Fraction() < WarnAt {
			continue
		}
		key := task + "\x00" + s.Period + "\x00" + s.Kind
		m.mu.Lock()
		if m.warned == nil || len(m.warned) > 10_000 { // a bound: a second notice is no harm
			m.warned = map[string]bool{}
		}
		seen := m.warned[key]
		m.warned[key] = true
		m.mu.Unlock()
		if !seen {
			go m.Notice(user, task, NearlyMessage(s, m.Config().Currency))
		}
	}
}

// NearlyMessage is the notice at WarnAt, e.g. "agor: 80% of the monthly
// budget of 20.00 USD is spent (16.10 USD), resets 2026-12-01".
func NearlyMessage(s Standing, currency string) string {
	period := map[string]string{"day": "daily", "month": "monthly"}[s.Period]
	bound, spent := fmt.Sprintf("%.2f %s", s.Bound, currency), fmt.Sprintf("%.2f %s", s.Spent, currency)
	if s.Kind == "tokens" {
		bound, spent = fmt.Sprintf("%.0f tokens", s.Bound), fmt.Sprintf("%.0f", s.Spent)
	}
	return fmt.Sprintf("agor: %.0f%% of the %s budget of %s is spent (%s), resets %s", s.Fraction()*100, period, bound, spent, s.ResetsAt.Format(time.DateOnly))
}

// BudgetMessage is what a person is told when s is reached, e.g.
// "agor: monthly budget of 20.00 USD reached, resets 2026-12-01".
func BudgetMessage(s Standing, currency string) string {
	period := map[string]string{"day": "daily", "month": "monthly"}[s.Period]
	bound := fmt.Sprintf("%.2f %s", s.Bound, currency)
	if s.Kind == "tokens" {
		bound = fmt.Sprintf("%.0f tokens", s.Bound)
	}
	return fmt.Sprintf("agor: %s budget of %s reached, resets %s", period, bound, s.ResetsAt.Format(time.DateOnly))
}
