package config

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Gateway is the model gateway: agents' model requests go through the
// daemon, which puts the key on them and writes each one's usage to its
// ledger. Prices turn tokens into cost; budgets bound a person's spend.
type Gateway struct {
	// Enabled routes agents' model requests through the gateway: each
	// agent is given a session token and a loopback address in place of
	// the key and the provider's URL. Off, keys are handed to agents just
	// in time: the default for a configuration without the key (one kept
	// across an upgrade); the packaged config.yaml turns it on.
	Enabled bool `yaml:"enabled"`
	// SocketPath is where executors reach the gateway (used when the
	// socket is not handed over by agor-daemon.socket).
	SocketPath string `yaml:"socket_path"`
	// Upstreams are the providers' base URLs, by API family: anthropic,
	// openai, gemini; and chatgpt, where Codex signed in with a person's
	// own ChatGPT account is sent (with her sign-in, never a key). The daemon's, never an agent's, decide where a key
	// is sent.
	Upstreams map[string]string `yaml:"upstreams"`
	// Currency names the unit of Prices and of the cost budgets.
	Currency string `yaml:"currency"`
	// Prices per million tokens, by model: an exact name, or a prefix
	// ending in "*" (the longest match wins); "default", when the
	// operator writes one, prices the rest. A model no entry prices, and
	// Free does not name, is refused: its cost could not be counted.
	Prices map[string]Price `yaml:"prices"`
	// Free are models (exact names, or prefixes ending in "*") served at
	// no cost: counted in the ledger and the token budgets, charged 0.
	Free []string `yaml:"free"`
	// Reserve is what a request holds against its person's budgets
	// while it runs.
	Reserve Reserve `yaml:"reserve"`
	Budgets Budgets `yaml:"budgets"`
	// DirectAgents are agents (claude-code, codex, gemini, opencode)
	// whose model calls do not go through the gateway: an operator who
	// points one at a provider the gateway does not speak. Each is handed
	// its key just in time, as with the gateway off, and doctor says so.
	DirectAgents []string `yaml:"direct_agents"`
	// MaxInFlight bounds each person's model requests running at once
	// (restart to change): one more is refused 429, which the CLIs
	// retry.
	MaxInFlight int `yaml:"max_in_flight"`
}

// Direct says whether tool's model calls bypass the gateway.
func (g Gateway) Direct(tool string) bool { return slices.Contains(g.DirectAgents, tool) }

// Price is what a million tokens of each kind cost.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
	// MaxOutput is the most output tokens the model answers with: what
	// is reserved for a request that names no bound of its own; 0:
	// Reserve.MaxOutput.
	MaxOutput int64 `yaml:"max_output,omitempty"`
}

// Reserve says what a request's worst case is, held against each of
// its person's bounds from when it is authorised until its usage is in
// the ledger: the output tokens it asks for at most (else its model's
// MaxOutput, else MaxOutput here), plus its body's bytes over
// BytesPerToken as input tokens, at most MaxInput; each at the dearest
// of the model's prices for its kind.
type Reserve struct {
	MaxOutput     int64 `yaml:"max_output"`
	BytesPerToken int64 `yaml:"bytes_per_token"`
	MaxInput      int64 `yaml:"max_input"`
}

// Worst is what a request may spend at most: tokens, and their cost in
// millionths of the currency at price p. maxOutput is the output bound
// the request names (0: none), bodyBytes its body's size.
func (r Reserve) Worst(p Price, maxOutput, bodyBytes int64) (tokens, micros int64) {
	out := maxOutput
	if out <= 0 {
		out = p.MaxOutput
	}
	if out <= 0 {
		out = r.MaxOutput
	}
	in := min(bodyBytes/max(r.BytesPerToken, 1)+1, r.MaxInput)
	inPrice := max(p.Input, p.CacheRead, p.CacheWrite)
	return in + out, int64(math.Ceil(float64(in)*inPrice + float64(out)*p.Output))
}

// Budgets bound each person's spend: a default, then each group override
// the person is in (file order), then her own, each key set at a later
// level replacing the earlier (as limits do).
type Budgets struct {
	Default BudgetSet            `yaml:"default"`
	Groups  []GroupBudget        `yaml:"groups"`
	Users   map[string]BudgetSet `yaml:"users"`
}

// GroupBudget is an override for the members of Group.
type GroupBudget struct {
	Group     string `yaml:"group"`
	BudgetSet `yaml:",inline"`
}

// BudgetSet bounds spend per calendar day and month (in the daemon's
// local time): cost in the gateway's currency, tokens of every kind
// together. 0 leaves the key to the level below; nothing set anywhere is
// no bound.
type BudgetSet struct {
	DayCost     float64 `yaml:"day_cost"`
	MonthCost   float64 `yaml:"month_cost"`
	DayTokens   int64   `yaml:"day_tokens"`
	MonthTokens int64   `yaml:"month_tokens"`
}

// DefaultGateway: list prices as the providers published them in 2025
// for the models the four CLIs use by default (per million tokens, USD;
// Claude Code's small model, OpenCode's gpt-4.1-mini included), with
// each family's most output tokens. No price for any other model
// (one is refused until the operator prices it, or lists it as free),
// and no budgets.
func DefaultGateway() Gateway {
	return Gateway{SocketPath: "/run/agor/gateway.sock", Upstreams: map[string]string{
		"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com", "gemini": "https://generativelanguage.googleapis.com",
		"chatgpt": "https://chatgpt.com/backend-api/codex",
	}, MaxInFlight: 16, Currency: "USD", Prices: map[string]Price{
		"claude-opus-*":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75, MaxOutput: 32_000},
		"claude-sonnet-*":   {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, MaxOutput: 64_000},
		"claude-haiku-*":    {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25, MaxOutput: 64_000},
		"claude-3-5-haiku*": {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1, MaxOutput: 8192},
		"gpt-5*":            {Input: 1.25, Output: 10, CacheRead: 0.125, MaxOutput: 128_000},
		"gpt-4.1*":          {Input: 2, Output: 8, CacheRead: 0.5, MaxOutput: 32_768},
		"gpt-4.1-mini*":     {Input: 0.4, Output: 1.6, CacheRead: 0.1, MaxOutput: 32_768},
		"gpt-4.1-nano*":     {Input: 0.1, Output: 0.4, CacheRead: 0.025, MaxOutput: 32_768},
		"gemini-2.5-pro*":   {Input: 1.25, Output: 10, CacheRead: 0.31, MaxOutput: 65_536},
		"gemini-2.5-flash*": {Input: 0.3, Output: 2.5, CacheRead: 0.075, MaxOutput: 65_536},
	}, Reserve: Reserve{MaxOutput: 128_000, BytesPerToken: 2, MaxInput: 2_000_000}}
}

// PriceOf is model's price as PriceFor says, nothing (0) when unpriced.
func (g Gateway) PriceOf(model string) Price {
	p, _ := g.PriceFor(model)
	return p
}

// PriceFor is model's price: its exact entry, else the longest prefix
// entry, else 0 when Free names it, else "default"; false when none of
// these prices it.
func (g Gateway) PriceFor(model string) (Price, bool) {
	if p, ok := g.Prices[model]; ok {
		return p, true
	}
	if best, ok := longestPrefix(model, maps.Keys(g.Prices)); ok {
		return g.Prices[best], true
	}
	if slices.Contains(g.Free, model) {
		return Price{}, true
	}
	if _, ok := longestPrefix(model, slices.Values(g.Free)); ok {
		return Price{}, true
	}
	p, ok := g.Prices["default"]
	return p, ok
}

// longestPrefix is the longest of patterns ending in "*" whose prefix
// model has.
func longestPrefix(model string, patterns iter.Seq[string]) (string, bool) {
	best, found := "", false
	for k := range patterns {
		prefix, ok := strings.CutSuffix(k, "*")
		if ok && strings.HasPrefix(model, prefix) && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	return best, found
}

// CostMicros is what the tokens cost, in millionths of the currency.
func (p Price) CostMicros(input, output, cacheRead, cacheWrite int64) int64 {
	c := float64(input)*p.Input + float64(output)*p.Output + float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite
	return int64(math.Round(c))
}

// For is user's effective budget, as Limits.For is her limits.
func (b Budgets) For(user string, inGroup func(group string) (bool, error)) (BudgetSet, error) {
	eff := b.Default
	for _, g := range b.Groups {
		in, err := inGroup(g.Group)
		if err != nil {
			return BudgetSet{}, fmt.Errorf("budgets for %s: group %s: %w", user, g.Group, err)
		}
		if in {
			eff = g.BudgetSet.over(eff)
		}
	}
	if u, ok := b.Users[user]; ok {
		eff = u.over(eff)
	}
	return eff, nil
}

// over is s with what it leaves unset taken from base.
func (s BudgetSet) over(base BudgetSet) BudgetSet {
	if s.DayCost != 0 {
		base.DayCost = s.DayCost
	}
	if s.MonthCost != 0 {
		base.MonthCost = s.MonthCost
	}
	if s.DayTokens != 0 {
		base.DayTokens = s.DayTokens
	}
	if s.MonthTokens != 0 {
		base.MonthTokens = s.MonthTokens
	}
	return base
}

// Bounded reports whether any bound is set.
func (s BudgetSet) Bounded() bool {
	return s.DayCost > 0 || s.MonthCost > 0 || s.DayTokens > 0 || s.MonthTokens > 0
}

// DayStart and MonthStart are the periods' beginnings in t's location;
// the next period begins at DayStart(t).AddDate(0, 0, 1) and
// MonthStart(t).AddDate(0, 1, 0).
func DayStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// MonthStart: see DayStart.
func MonthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, t.Location())
}

func (g Gateway) validate() error {
	if g.MaxInFlight < 1 || g.MaxInFlight > 1024 {
		return fmt.Errorf("gateway.max_in_flight: %d is not from 1 to 1024", g.MaxInFlight)
	}
	for _, a := range g.DirectAgents {
		if a != "claude-code" && a != "codex" && a != "gemini" && a != "opencode" {
			return fmt.Errorf("gateway.direct_agents: %q is not an agent (claude-code, codex, gemini, opencode)", a)
		}
	}
	for name, u := range g.Upstreams {
		if name != "anthropic" && name != "openai" && name != "gemini" && name != "chatgpt" {
			return fmt.Errorf("gateway.upstreams.%s: not an API family (anthropic, openai, gemini, chatgpt)", name)
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.User != nil || p.RawQuery != "" {
			return fmt.Errorf("gateway.upstreams.%s: %q is not an http(s) base URL", name, u)
		}
	}
	if g.Reserve.MaxOutput < 1 || g.Reserve.BytesPerToken < 1 || g.Reserve.MaxInput < 1 {
		return fmt.Errorf("gateway.reserve: max_output, bytes_per_token and max_input are 1 or more")
	}
	for model, p := range g.Prices {
		if p.MaxOutput < 0 {
			return fmt.Errorf("gateway.prices.%s: max_output is 0 (gateway.reserve.max_output) or more", model)
		}
		for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("gateway.prices.%s: prices are per million tokens, 0 or more", model)
			}
		}
	}
	check := func(key string, s BudgetSet) error {
		if s.DayCost < 0 || s.MonthCost < 0 || s.DayTokens < 0 || s.MonthTokens < 0 ||
			math.IsNaN(s.DayCost) || math.IsNaN(s.MonthCost) || math.IsInf(s.DayCost, 0) || math.IsInf(s.MonthCost, 0) {
			return fmt.Errorf("%s: budgets are 0 (not set here) or positive", key)
		}
		return nil
	}
	if err := check("gateway.budgets.default", g.Budgets.Default); err != nil {
		return err
	}
	for i, gr := range g.Budgets.Groups {
		if gr.Group == "" {
			return fmt.Errorf("gateway.budgets.groups[%d]: group is required", i)
		}
		if err := check(fmt.Sprintf("gateway.budgets.groups[%d]", i), gr.BudgetSet); err != nil {
			return err
		}
	}
	for u, s := range g.Budgets.Users {
		if err := check("gateway.budgets.users."+u, s); err != nil {
			return err
		}
	}
	return nil
}
