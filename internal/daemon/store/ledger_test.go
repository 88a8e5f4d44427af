package store

import (
	"path/filepath"
	"testing"
	"time"
)

// The ledger sums per person and model over a period, keeps a task's
// rows after the task is gone, and refuses a row without its person.
func TestLedgerTotals(t *testing.T) {
	db := openTest(t, filepath.Join(t.TempDir(), "agor.db"))
	day := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rows := []Spend{
		{At: day, User: "alice", UID: 1001, Task: "t1", API: "anthropic", Model: "m1", Input: 100, Output: 10, CacheRead: 5, CacheWrite: 1, CostMicros: 700, Status: 200, Streamed: true},
		{At: day.Add(time.Minute), User: "alice", UID: 1001, Task: "t1", API: "anthropic", Model: "m1", Input: 50, Output: 5, CostMicros: 300, Status: 200},
		{At: day.Add(2 * time.Minute), User: "alice", UID: 1001, Task: "t2", API: "gemini", Model: "m2", Input: 7, Output: 3, Status: 200},
		{At: day.Add(24 * time.Hour), User: "alice", UID: 1001, Task: "t3", API: "anthropic", Model: "m1", Input: 1000, Status: 200},
		{At: day, User: "bob", UID: NoUID, API: "openai-chat", Model: "m3", Input: 9, Output: 9, Status: 200},
	}
	for _, r := range rows {
		if err := db.AddSpend(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.SpendTotals(SpendFilter{User: "alice", Since: day, Until: day.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := []SpendTotal{
		{User: "alice", Model: "m1", Requests: 2, Input: 150, Output: 15, CacheRead: 5, CacheWrite: 1, CostMicros: 1000},
		{User: "alice", Model: "m2", Requests: 1, Input: 7, Output: 3},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("alice's day: %+v, want %+v", got, want)
	}
	all, err := db.SpendTotals(SpendFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("everyone, all time: %+v, %v; want 3 rows (alice m1, alice m2, bob m3)", all, err)
	}
	t1, err := db.TaskSpend("t1")
	if err != nil || len(t1) != 2 || t1[0].Input != 100 || !t1[0].Streamed || t1[0].UID != 1001 {
		t.Fatalf("task t1: %+v, %v", t1, err)
	}
	if err := db.AddSpend(Spend{API: "anthropic"}); err == nil {
		t.Fatal("a row without its person was stored")
	}
}
