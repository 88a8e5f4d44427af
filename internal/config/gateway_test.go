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
// prefix); budgets resolve default, groups, user.
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
		{"claude-sonnet-4-5-20250929", Price{Input: 4, Output: 20}},                                           // the operator's longer prefix
		{"claude-sonnet-4", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, MaxOutput: 64_000}}, // the default table's
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

// A model nothing prices is unpriced (refused by the gateway) unless
// free names it or the operator writes a default; no default is built
// in, and one an operator writes keeps its meaning.
func TestGatewayUnpricedFreeDefault(t *testing.T) {
	if _, ok := DefaultGateway().PriceFor("someone-elses-model"); ok {
		t.Error("an unknown model is priced by the built-in table")
	}
	c, err := Parse(strings.NewReader("gateway:\n  free: [local-*, tiny]\n  prices: {local-big*: {input: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]bool{"local-7b": true, "tiny": true, "tiny-2": false, "gpt-4o": false} {
		if p, ok := c.Gateway.PriceFor(model); ok != want || p != (Price{}) {
			t.Errorf("PriceFor(%s) = %+v %v, want free %v", model, p, ok, want)
		}
	}
	if p, _ := c.Gateway.PriceFor("local-big-70b"); p.Input != 1 {
		t.Errorf("a price beats free: %+v", p)
	}
	c, err = Parse(strings.NewReader("gateway: {prices: {default: {input: 15, output: 75}}}"))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Gateway.PriceFor("someone-elses-model"); !ok || p != (Price{Input: 15, Output: 75}) {
		t.Errorf("a written default: %+v %v", p, ok)
	}
}

// Worst is the named output bound, else the model's, else the
// reserve's; plus the body over bytes_per_token, at most max_input; at
// the dearest input price.
func TestReserveWorst(t *testing.T) {
	r := Reserve{MaxOutput: 1000, BytesPerToken: 2, MaxInput: 500}
	p := Price{Input: 1, CacheWrite: 2, Output: 10}
	for _, tc := range []struct{ maxOut, bytes, tokens, micros int64 }{
		{100, 99, 150, 1100},      // 50 in at 2, 100 out at 10
		{0, 99, 1050, 10100},      // the reserve's 1000 out
		{0, 1 << 20, 1500, 11000}, // at most 500 in
	} {
		if tok, mic := r.Worst(p, tc.maxOut, tc.bytes); tok != tc.tokens || mic != tc.micros {
			t.Errorf("Worst(%d, %d) = %d, %d; want %d, %d", tc.maxOut, tc.bytes, tok, mic, tc.tokens, tc.micros)
		}
	}
	p.MaxOutput = 300
	if tok, _ := r.Worst(p, 0, 1); tok != 301 {
		t.Errorf("the model's max_output: %d tokens, want 301", tok)
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
		"gateway: {reserve: {bytes_per_token: 0}}",
		"gateway: {prices: {m: {max_output: -1}}}",
	} {
		if _, err := Parse(strings.NewReader(y)); err == nil || !strings.Contains(err.Error(), "gateway.") {
			t.Errorf("%s: err %v, want one naming the key", y, err)
		}
	}
}
