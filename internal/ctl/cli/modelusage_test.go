package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// usageDaemon answers GET /v1/usage with rep and sends each query it
// was asked on the channel it returns.
func usageDaemon(t *testing.T, rep apiwire.UsageReport) (string, <-chan string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "daemon.sock")
	ln := listenUnix(t, sock)
	queries := make(chan string, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/v1/usage" {
			http.NotFound(w, r)
			return
		}
		queries <- r.URL.RawQuery
		_ = json.NewEncoder(w).Encode(rep)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock, queries
}

func usageReport() apiwire.UsageReport {
	cet := time.FixedZone("CET", 3600)
	return apiwire.UsageReport{
		Since: time.Date(2026, 11, 1, 0, 0, 0, 0, cet), Until: time.Date(2026, 12, 1, 0, 0, 0, 0, cet), Currency: "USD",
		Rows: []apiwire.UsageRow{
			{User: "alice", Model: "claude-sonnet-4", Requests: 31, InputTokens: 120_000, OutputTokens: 9000, CacheReadTokens: 800_000, CacheWriteTokens: 40_000, Cost: 12.4},
			{User: "bob", Model: "gpt-5", Requests: 2, InputTokens: 10, OutputTokens: 5, Cost: 0.0001},
		},
		Budgets: []apiwire.BudgetStanding{
			{User: "alice", Period: "month", Kind: "cost", Spent: 12.4, Reserved: 1.1, Left: 6.5, Bound: 20, ResetsAt: time.Date(2026, 12, 1, 0, 0, 0, 0, cet)},
			{User: "bob", Period: "day", Kind: "tokens", Spent: 1500, Bound: 1000, ResetsAt: time.Date(2026, 11, 28, 0, 0, 0, 0, cet)},
		},
	}
}

// agorctl usage prints the table and a line per budget bound, the reset
// in the daemon's calendar.
func TestUsageTable(t *testing.T) {
	sock, _ := usageDaemon(t, usageReport())
	r := agorctl(context.Background(), closedStdin{t}, "usage", "--api", sock)
	want := `USER   MODEL            REQUESTS  IN      OUT   CACHE-READ  CACHE-WRITE  COST
alice  claude-sonnet-4  31        120000  9000  800000      40000        12.40
bob    gpt-5            2         10      5     0           0            <0.01

alice: month cost 12.40 of 20.00 USD (62%), 1.10 reserved, 6.50 left, resets 2026-12-01
bob: day tokens 1500 of 1000 (150%, reached), 0 reserved, 0 left, resets 2026-11-28
`
	if r.code != exitOK || r.stdout != want || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want)
	}
}

// The flags become the query; mistakes are usage errors that ask
// nothing of the daemon; --json prints the daemon's reply.
func TestUsageFlags(t *testing.T) {
	localMidnight := url.Values{"since": {time.Date(2026, 10, 1, 0, 0, 0, 0, time.Local).Format(time.RFC3339)}}.Encode()
	sock, queries := usageDaemon(t, apiwire.UsageReport{Rows: []apiwire.UsageRow{}})
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		query string // as sent; "" none
		out   string // in stdout or stderr
	}{
		{"default", nil, exitOK, "", "no model requests from"},
		{"admin's filter", []string{"--user", "bob", "--period", "day"}, exitOK, "period=day&user=bob", "USER"},
		{"a range", []string{"--since", "2026-10-01T00:00:00Z", "--until", "2026-11-01T00:00:00Z"}, exitOK, "since=2026-10-01T00%3A00%3A00Z&until=2026-11-01T00%3A00%3A00Z", "USER"},
		{"dates", []string{"--since", "2026-10-01"}, exitOK, localMidnight, "USER"},
		{"json", []string{"--json"}, exitOK, "", `"rows":[]`},
		{"no such period", []string{"--period", "year"}, exitUsage, "-", `"year" is neither day nor month`},
		{"period and range", []string{"--period", "day", "--since", "2026-10-01"}, exitUsage, "-", "not both"},
		{"until alone", []string{"--until", "2026-10-01"}, exitUsage, "-", "--until needs --since"},
		{"not a time", []string{"--since", "yesterday"}, exitUsage, "-", "neither an RFC 3339 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := agorctl(context.Background(), closedStdin{t}, append([]string{"usage", "--api", sock}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s%s", r.code, tc.code, tc.out, r.stdout, r.stderr)
			}
			select {
			case q := <-queries:
				if q != tc.query {
					t.Errorf("query %q, want %q", q, tc.query)
				}
			default:
				if tc.query != "-" {
					t.Errorf("the daemon was not asked")
				}
			}
		})
	}
}
