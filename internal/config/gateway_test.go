package config

import (
	"slices"
	"strings"
	"testing"
)

const gatewayYAML = `
gateway:
  prices:
    stand-in-model: {input: 2, output: 10, cache_read: 0.5, cache_write: 4}
    claude-sonnet-4-5*: {input: 4, output: 20}
  budgets:
    default: {month_cost: 20}
    groups:
      - {group: students, month_cost: 5, day_tokens: 100000}
    users:
      alice: {day_cost: 2}
`

// An operator's prices join the defaults (an exact name, then the longest
// prefix, then "default"); budgets resolve default, groups, user.
func TestGatewayPricesAndBudgets(t *testing.T) {
	c, err := Parse(strings.NewReader(gatewayYAML))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	for _, tc := range []struct {
		model string
		want  Price
	}{
		{"stand-in-model", Price{Input: 2, Output: 10, CacheRead: 0.5, CacheWrite: 4}},
		{"claude-sonnet-4-5-20250929", Price{Input: 4, Output: 20}},                        // the operator's longer prefix
		{"claude-sonnet-4", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}, // the default table's
		{"someone-elses-model", g.Prices["default"]},
	} {
		if got := g.PriceOf(tc.model); got != tc.want {
			t.Errorf("PriceOf(%s) = %+v, want %+v", tc.model, got, tc.want)
		}
	}
	// 1000 in, 200 out, 100 cache read, 10 written at stand-in prices:
	// 2000 + 2000 + 50 + 40 millionths.
	if got := g.PriceOf("stand-in-model").CostMicros(1000, 200, 100, 10); got != 4090 {
		t.Errorf("cost = %d micros, want 4090", got)
	}
	member := map[string][]string{"alice": {"students"}, "bob": nil}
	in := func(user string) func(string) (bool, error) {
		return func(g string) (bool, error) { return slices.Contains(member[user], g), nil }
	}
	alice, _ := g.Budgets.For("alice", in("alice"))
	bob, _ := g.Budgets.For("bob", in("bob"))
	if want := (BudgetSet{DayCost: 2, MonthCost: 5, DayTokens: 100000}); alice != want {
		t.Errorf("alice's budget %+v, want %+v", alice, want)
	}
	if want := (BudgetSet{MonthCost: 20}); bob != want {
		t.Errorf("bob's budget %+v, want %+v", bob, want)
	}
	if (BudgetSet{}).Bounded() || !bob.Bounded() {
		t.Error("Bounded: wrong")
	}
	if g.MaxInFlight != 16 {
		t.Errorf("max_in_flight %d by default, want 16", g.MaxInFlight)
	}
}

func TestGatewayRefusesBadValues(t *testing.T) {
	for _, y := range []string{
		"gateway: {prices: {m: {input: -1}}}",
		"gateway: {budgets: {default: {month_cost: -5}}}",
		"gateway: {budgets: {groups: [{month_cost: 5}]}}",
		"gateway: {budgets: {users: {alice: {day_tokens: -1}}}}",
		"gateway: {max_in_flight: 0}",
		"gateway: {max_in_flight: 5000}",
	} {
		if _, err := Parse(strings.NewReader(y)); err == nil || !strings.Contains(err.Error(), "gateway.") {
			t.Errorf("%s: err %v, want one naming the key", y, err)
		}
	}
}
