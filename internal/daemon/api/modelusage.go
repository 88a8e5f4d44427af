package api

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ledger is the model gateway's record of requests, one row each, which
// store.DB keeps. It is asked of the Store rather than named in it so
// that a Store without one (the tests' fakes) needs no stub: GET
// /v1/usage is then not served and /v1/metrics has no model series.
type ledger interface {
	SpendTotals(f store.SpendFilter) ([]store.SpendTotal, error)
}

func (s *Server) ledger() ledger {
	l, _ := s.Store.(ledger)
	return l
}

// queryUsage is GET /v1/usage: the ledger summed per person and model
// over ?period= (day or month, the current one in the daemon's local
// time; month by default) or ?since= and ?until= (RFC 3339), with the
// budget standings while the gateway is on. A person sees her own; root
// and the admin group everyone's, or ?user='s.
func (s *Server) queryUsage(w http.ResponseWriter, r *http.Request) {
	c := s.caller(r)
	q := r.URL.Query()
	user := q.Get("user")
	if user != "" && !c.sees(user) {
		writeError(w, errNotYourself())
		return
	}
	if !c.anyone() {
		user = c.user.Name
	}
	since, until, err := usagePeriod(q, time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	totals, err := s.ledger().SpendTotals(store.SpendFilter{User: user, Since: since, Until: until})
	if err != nil {
		writeError(w, err)
		return
	}
	rep := apiwire.UsageReport{Since: since, Until: until, Rows: usageRows(totals)}
	if s.Gateway != nil {
		rep.Currency = s.Gateway.Currency()
		rep.Budgets = s.standings(user, totals)
	}
	writeJSON(w, http.StatusOK, rep)
}

// usagePeriod is the report's [since, until): the current calendar day
// or month at now, or the explicit range (until defaults to now).
func usagePeriod(q url.Values, now time.Time) (since, until time.Time, err error) {
	period, rawSince, rawUntil := q.Get("period"), q.Get("since"), q.Get("until")
	if rawSince == "" && rawUntil == "" {
		switch period {
		case "", "month":
			start := config.MonthStart(now)
			return start, start.AddDate(0, 1, 0), nil
		case "day":
			start := config.DayStart(now)
			return start, start.AddDate(0, 0, 1), nil
		}
		return since, until, rpc.InvalidParams("period", "must be day or month")
	}
	switch {
	case period != "":
		return since, until, rpc.InvalidParams("period", "give a period, or since and until, not both")
	case rawSince == "":
		return since, until, rpc.InvalidParams("since", "is required with until")
	}
	if since, err = time.Parse(time.RFC3339, rawSince); err != nil {
		return since, until, rpc.InvalidParams("since", "must be an RFC 3339 time")
	}
	until = now
	if rawUntil != "" {
		if until, err = time.Parse(time.RFC3339, rawUntil); err != nil {
			return since, until, rpc.InvalidParams("until", "must be an RFC 3339 time")
		}
	}
	if !until.After(since) {
		return since, until, rpc.InvalidParams("until", "must be after since")
	}
	return since, until, nil
}

// usageRows are the totals as the API shows them (never null).
func usageRows(totals []store.SpendTotal) []apiwire.UsageRow {
	out := make([]apiwire.UsageRow, 0, len(totals))
	for _, t := range totals {
		out = append(out, apiwire.UsageRow{User: t.User, Model: t.Model, Requests: t.Requests, InputTokens: t.Input,
			OutputTokens: t.Output, CacheReadTokens: t.CacheRead, CacheWriteTokens: t.CacheWrite, Cost: float64(t.CostMicros) / 1e6})
	}
	return out
}

// standings are the budget standings of user (a person asking is always
// user, spend or not), or, for an admin who named nobody, of everyone in
// the rows or with spend this month. A standing that cannot be read
// (a deleted account, whose groups the user database no longer knows) is
// logged and left out: the rows are worth having without it.
func (s *Server) standings(user string, totals []store.SpendTotal) []apiwire.BudgetStanding {
	people := []string{user}
	if user == "" {
		people = s.spenders(totals)
	}
	var out []apiwire.BudgetStanding
	for _, p := range people {
		st, err := s.Gateway.Standings(p)
		if err != nil {
			s.log().Warn("usage: budget standing not read", "user", p, "err", err)
			continue
		}
		for _, x := range st {
			out = append(out, apiwire.BudgetStanding{User: p, Period: x.Period, Kind: x.Kind, Spent: x.Spent,
				Reserved: x.Reserved, Left: x.Left(), Bound: x.Bound, ResetsAt: x.ResetsAt})
		}
	}
	return out
}

// spenders are the persons of totals and those with spend this month,
// sorted: whoever has spent against a bound now.
func (s *Server) spenders(totals []store.SpendTotal) []string {
	month, err := s.ledger().SpendTotals(store.SpendFilter{Since: config.MonthStart(time.Now())})
	if err != nil {
		s.log().Warn("usage: this month's spenders not read", "err", err)
	}
	names := map[string]bool{}
	for _, t := range slices.Concat(totals, month) {
		names[t.User] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// writeModelMetrics writes this month's model tokens and cost per person
// and model from the ledger: every person's for an admin, only the
// caller's own for anyone else (as the usage series). They count from 0
// again each calendar month, which Prometheus reads as a counter reset.
func (s *Server) writeModelMetrics(w io.Writer, c who) {
	l := s.ledger()
	if l == nil {
		return
	}
	f := store.SpendFilter{Since: config.MonthStart(time.Now())}
	if !c.anyone() {
		f.User = c.user.Name
	}
	totals, err := l.SpendTotals(f)
	if err != nil {
		s.log().Warn("model usage metrics: ledger", "err", err)
		return
	}
	fmt.Fprintln(w, "# HELP agor_model_tokens_total Model tokens this calendar month (the daemon's local time) by person, model and kind (input is uncached), as the providers reported them to the gateway.\n# TYPE agor_model_tokens_total counter")
	for _, t := range totals {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"input", t.Input}, {"output", t.Output}, {"cache_read", t.CacheRead}, {"cache_write", t.CacheWrite}} {
			fmt.Fprintf(w, "agor_model_tokens_total{user=\"%s\",model=\"%s\",kind=%q} %d\n", label(t.User), label(t.Model), k.kind, k.n)
		}
	}
	fmt.Fprintln(w, "# HELP agor_model_cost_micros_total Model requests' cost this calendar month by person and model, in millionths of gateway.currency, as priced when written.\n# TYPE agor_model_cost_micros_total counter")
	for _, t := range totals {
		fmt.Fprintf(w, "agor_model_cost_micros_total{user=\"%s\",model=\"%s\"} %d\n", label(t.User), label(t.Model), t.CostMicros)
	}
}

// labelEscaper escapes a label value as the Prometheus text format
// does; Go's %q would write escapes (\x, \u) a scraper rejects, and a
// model name is whatever an agent's request said.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func label(v string) string { return labelEscaper.Replace(strings.ToValidUTF8(v, "\uFFFD")) }
