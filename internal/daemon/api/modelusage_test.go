package api

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

const carolAdmin = 1003 // carol, in api.admin_group here (the quota tests' carol is not)

// usageLedger writes this month's requests of alice (two models) and
// bob, and one of alice's from last month, to db.
func usageLedger(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	lastMonth := config.MonthStart(now).Add(-time.Hour)
	for _, s := range []store.Spend{
		{At: now, User: "alice", UID: alice, API: "anthropic", Model: "claude-sonnet-4", Input: 1000, Output: 200, CacheRead: 50, CacheWrite: 10, CostMicros: 12_400_000},
		{At: now, User: "alice", UID: alice, API: "openai", Model: "gpt-5", Input: 10, Output: 5, CostMicros: 100},
		{At: lastMonth, User: "alice", UID: alice, API: "anthropic", Model: "claude-sonnet-4", Input: 999_999, CostMicros: 99_000_000},
		{At: now, User: "bob", UID: bob, API: "anthropic", Model: "claude-sonnet-4", Input: 7, Output: 3, CostMicros: 5_000_000},
	} {
		if err := db.AddSpend(s); err != nil {
			t.Fatal(err)
		}
	}
}

// newUsageEnv is the API over a real store holding usageLedger's rows;
// carolAdmin is in api.admin_group.
func newUsageEnv(t *testing.T) *accountsEnv {
	t.Helper()
	e := newAccountsEnv(t, users{"root": 0, "alice": alice, "bob": bob, "carol": carolAdmin})
	tab := users{"root": 0, "alice": alice, "bob": bob, "carol": carolAdmin}.source()
	tab.Groups = []identity.Group{{Name: "agor-admins", GID: 900}}
	tab.Members = map[string][]string{"agor-admins": {"carol"}}
	e.srv.Accounts, e.srv.AdminGroup = identity.New(tab), "agor-admins"
	usageLedger(t, e.db, time.Now())
	return e
}

// usageAs is GET /v1/usage?query as uid: the status, the reply, and the
// refusal's reason if it was one.
func usageAs(t *testing.T, e *accountsEnv, uid uint32, query string) (int, apiwire.UsageReport, string) {
	t.Helper()
	r := httptest.NewRequest("GET", "http://agor/v1/usage?"+query, nil)
	r = r.WithContext(peer.NewContext(r.Context(), peer.Cred{UID: uid, GID: uid}))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	var rep apiwire.UsageReport
	var refusal apiwire.ErrorBody
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%q: %v", w.Body, err)
		}
	} else {
		_ = json.Unmarshal(w.Body.Bytes(), &refusal)
	}
	return w.Code, rep, refusal.Error.Reason
}

var (
	aliceSonnet = apiwire.UsageRow{User: "alice", Model: "claude-sonnet-4", Requests: 1, InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 50, CacheWriteTokens: 10, Cost: 12.4}
	aliceGPT    = apiwire.UsageRow{User: "alice", Model: "gpt-5", Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 0.0001}
	bobSonnet   = apiwire.UsageRow{User: "bob", Model: "claude-sonnet-4", Requests: 1, InputTokens: 7, OutputTokens: 3, Cost: 5}
	aliceBefore = apiwire.UsageRow{User: "alice", Model: "claude-sonnet-4", Requests: 1, InputTokens: 999_999, Cost: 99}
)

// GET /v1/usage: a person sees her own rows, whatever she asks; root and
// the admin group see everyone's, or user='s; the current month is the
// default and leaves last month's row out; since/until reach it.
func TestUsageRows(t *testing.T) {
	e := newUsageEnv(t)
	monthStart := config.MonthStart(time.Now())
	lastMonth := url.Values{"since": {monthStart.AddDate(0, -1, 0).Format(time.RFC3339)}, "until": {monthStart.Format(time.RFC3339)}}.Encode()
	for _, tc := range []struct {
		name   string
		uid    uint32
		query  string
		rows   []apiwire.UsageRow
		code   int
		reason string
	}{
		{"alice sees her own", alice, "", []apiwire.UsageRow{aliceSonnet, aliceGPT}, 200, ""},
		{"alice's own by name", alice, "user=alice&period=month", []apiwire.UsageRow{aliceSonnet, aliceGPT}, 200, ""},
		{"alice asks for bob's", alice, "user=bob", nil, 403, apiwire.ReasonNotYourself},
		{"bob sees his own", bob, "period=day", []apiwire.UsageRow{bobSonnet}, 200, ""},
		{"root sees all", 0, "", []apiwire.UsageRow{aliceSonnet, aliceGPT, bobSonnet}, 200, ""},
		{"root filters by user", 0, "user=bob", []apiwire.UsageRow{bobSonnet}, 200, ""},
		{"the admin group sees all", carolAdmin, "", []apiwire.UsageRow{aliceSonnet, aliceGPT, bobSonnet}, 200, ""},
		{"last month, explicitly", alice, lastMonth, []apiwire.UsageRow{aliceBefore}, 200, ""},
		{"no such period", alice, "period=year", nil, 400, "invalid_params"},
		{"a period and a range", alice, "period=day&" + lastMonth, nil, 400, "invalid_params"},
		{"until without since", alice, "until=" + url.QueryEscape(monthStart.Format(time.RFC3339)), nil, 400, "invalid_params"},
		{"not RFC 3339", alice, "since=yesterday", nil, 400, "invalid_params"},
		{"until before since", alice, "since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", nil, 400, "invalid_params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, rep, reason := usageAs(t, e, tc.uid, tc.query)
			if code != tc.code || reason != tc.reason {
				t.Fatalf("status %d %q, want %d %q", code, reason, tc.code, tc.reason)
			}
			if code != 200 {
				return
			}
			if d := cmp.Diff(tc.rows, rep.Rows); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
			if rep.Budgets != nil || rep.Currency != "" {
				t.Errorf("budgets %+v in %q without a gateway", rep.Budgets, rep.Currency)
			}
		})
	}
}

// The default period is the calendar month in the daemon's local time;
// period=day is today; an empty ledger is an empty list, not null.
func TestUsagePeriods(t *testing.T) {
	e := newUsageEnv(t)
	now := time.Now()
	code, rep, _ := usageAs(t, e, alice, "")
	if code != 200 || !rep.Since.Equal(config.MonthStart(now)) || !rep.Until.Equal(config.MonthStart(now).AddDate(0, 1, 0)) {
		t.Errorf("month: %v to %v", rep.Since, rep.Until)
	}
	_, rep, _ = usageAs(t, e, alice, "period=day")
	if !rep.Since.Equal(config.DayStart(now)) || !rep.Until.Equal(config.DayStart(now).AddDate(0, 0, 1)) {
		t.Errorf("day: %v to %v", rep.Since, rep.Until)
	}
	_, rep, _ = usageAs(t, e, alice, "since=2001-01-01T00:00:00Z")
	if rep.Rows == nil || len(rep.Rows) != 2 || rep.Until.Before(now) {
		t.Errorf("since 2001: %+v", rep)
	}
	_, rep, _ = usageAs(t, e, alice, "since=2001-01-01T00:00:00Z&until=2001-02-01T00:00:00Z")
	if rep.Rows == nil || len(rep.Rows) != 0 {
		t.Errorf("an empty period: %#v", rep.Rows)
	}
}

// With the gateway on, each listed person's standing against her budget
// comes with the rows, in the gateway's currency: alice's own for her;
// everyone's with spend this month for an admin.
func TestUsageBudgets(t *testing.T) {
	e := newUsageEnv(t)
	cfg := config.DefaultGateway()
	cfg.Currency = "EUR"
	cfg.Budgets.Users = map[string]config.BudgetSet{"alice": {MonthCost: 20}, "bob": {DayTokens: 100}}
	e.srv.Gateway = &meter.Meter{Store: e.db, Config: func() config.Gateway { return cfg },
		InGroup: func(string, string) (bool, error) { return false, nil }}
	now := time.Now()
	aliceMonth := apiwire.BudgetStanding{User: "alice", Period: "month", Kind: "cost", Spent: 12.4001, Bound: 20, ResetsAt: config.MonthStart(now).AddDate(0, 1, 0)}
	aliceMonth.Left = aliceMonth.Bound - aliceMonth.Spent
	bobDay := apiwire.BudgetStanding{User: "bob", Period: "day", Kind: "tokens", Spent: 10, Left: 90, Bound: 100, ResetsAt: config.DayStart(now).AddDate(0, 0, 1)}
	for _, tc := range []struct {
		name  string
		uid   uint32
		query string
		want  []apiwire.BudgetStanding
	}{
		{"alice", alice, "", []apiwire.BudgetStanding{aliceMonth}},
		{"alice, last year", alice, "since=2025-01-01T00:00:00Z&until=2025-02-01T00:00:00Z", []apiwire.BudgetStanding{aliceMonth}},
		{"root", 0, "", []apiwire.BudgetStanding{aliceMonth, bobDay}},
		{"root for bob", 0, "user=bob", []apiwire.BudgetStanding{bobDay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, rep, reason := usageAs(t, e, tc.uid, tc.query)
			if code != 200 || rep.Currency != "EUR" {
				t.Fatalf("status %d %s, currency %q", code, reason, rep.Currency)
			}
			if d := cmp.Diff(tc.want, rep.Budgets, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
				t.Errorf("budgets (-want +got):\n%s", d)
			}
		})
	}
	// A request in flight: its worst case is reserved, and not left.
	release, err := e.srv.Gateway.(*meter.Meter).Reserve(gateway.Grant{Person: "alice"}, gateway.Ask{Model: "claude-sonnet-4", MaxOutput: 10_000, Bytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, rep, _ := usageAs(t, e, alice, "")
	if b := rep.Budgets[0]; b.Reserved != 0.153754 || math.Abs(b.Left-(20-12.4001-0.153754)) > 1e-9 {
		t.Errorf("with 10000 out and 1001 in at 15 and 3.75 a million held: %+v", b)
	}
}

// /v1/metrics has this month's model tokens and cost per person and
// model from the ledger: alice sees her own series, an admin everyone's.
func TestMetricsModelSeries(t *testing.T) {
	db, err := store.Open(t.TempDir() + "/agor.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	usageLedger(t, db, time.Now())
	s := &Server{Backend: usageBackend{}, Pool: &pool.Pool{}, Store: db}
	aliceIn := `agor_model_tokens_total{user="alice",model="claude-sonnet-4",kind="input"} 1000` // not last month's too
	for _, tc := range []struct {
		name  string
		c     who
		see   []string
		never []string
	}{
		{"alice", who{user: identity.User{Name: "alice"}}, []string{aliceIn,
			`agor_model_tokens_total{user="alice",model="gpt-5",kind="output"} 5`,
			`agor_model_tokens_total{user="alice",model="claude-sonnet-4",kind="cache_write"} 10`,
			`agor_model_cost_micros_total{user="alice",model="claude-sonnet-4"} 12400000`}, []string{`user="bob"`}},
		{"an admin", who{user: identity.User{Name: "root"}, admin: true}, []string{aliceIn,
			`agor_model_cost_micros_total{user="bob",model="claude-sonnet-4"} 5000000`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/metrics", nil)
			r = r.WithContext(context.WithValue(r.Context(), whoKey{}, tc.c))
			w := httptest.NewRecorder()
			s.serveMetrics(w, r)
			body := w.Body.String()
			for _, want := range tc.see {
				if !strings.Contains(body, want+"\n") {
					t.Errorf("lacks %s:\n%s", want, body)
				}
			}
			for _, not := range tc.never {
				if strings.Contains(body, not) {
					t.Errorf("shows %s:\n%s", not, body)
				}
			}
		})
	}
}
