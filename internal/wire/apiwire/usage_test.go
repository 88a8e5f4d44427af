package apiwire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGoldenUsage: GET /v1/usage's reply encodes as
// testdata/usage/usage_report.json says (its own folder, beside the
// replies golden() lists: the field names are the contract either way).
func TestGoldenUsage(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.FixedZone("", 3600))
	v := UsageReport{Since: at, Until: at.AddDate(0, 1, 0), Currency: "USD",
		Rows: []UsageRow{{User: "alice", Model: "claude-sonnet-4", Requests: 31, InputTokens: 120000, OutputTokens: 9000,
			CacheReadTokens: 800000, CacheWriteTokens: 40000, Cost: 12.4}},
		Budgets: []BudgetStanding{{User: "alice", Period: "month", Kind: "cost", Spent: 12.4, Reserved: 1.1, Left: 6.5, Bound: 20, ResetsAt: at.AddDate(0, 1, 0)}}}
	path := filepath.Join("testdata", "usage", "usage_report.json")
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestGoldenUsage -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encodes as\n%s\nwant\n%s", got, want)
	}
	var back UsageReport
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.MarshalIndent(back, "", "  "); !bytes.Equal(append(again, '\n'), want) {
		t.Errorf("does not decode to the same value: %s", again)
	}
}
