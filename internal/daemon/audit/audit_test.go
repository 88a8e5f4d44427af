package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, o Options) *Logger {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func readLines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func TestLogWritesFileAndMemory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := open(t, Options{Path: path})
	t0 := time.Unix(1_700_000_000, 0).UTC()
	recs := []Record{
		{Time: t0, Action: APIKeyIssued, User: "alice", Task: "t1", Credential: "ANTHROPIC_API_KEY"},
		{Time: t0.Add(time.Second), Action: APIKeyRefused, User: "bob", Reason: "token_mismatch"},
		{Time: t0.Add(2 * time.Second), Action: PermissionDecided, User: "alice", Task: "t2", Tool: "Bash", Decision: "approved"},
	}
	for _, r := range recs {
		l.Log(r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, readLines(t, path)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		f    Filter
		want []Record
	}{
		{"all", Filter{}, recs},
		{"user", Filter{User: "alice"}, []Record{recs[0], recs[2]}},
		{"action", Filter{Action: APIKeyRefused}, recs[1:2]},
		{"task", Filter{Task: "t2"}, recs[2:]},
		{"since", Filter{Since: t0.Add(time.Second)}, recs[1:]},
		{"limit keeps newest", Filter{Limit: 1}, recs[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, l.Query(tt.f)); diff != "" {
				t.Errorf("Query (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRingKeepsNewest(t *testing.T) {
	t.Parallel()
	l := open(t, Options{Keep: 3})
	for i := range 5 {
		l.Log(Record{Action: TaskStarted, Task: string(rune('a' + i))})
	}
	var got []string
	for _, r := range l.Query(Filter{}) {
		got = append(got, r.Task)
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestAggregateOneRecordPerKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l := open(t, Options{Path: path, Window: time.Hour}) // flush by hand
	for range 10_000 {
		l.Aggregate(Record{Action: RateLimited, User: "alice", Reason: "too_many_requests"})
	}
	l.Aggregate(Record{Action: RateLimited, User: "bob", Reason: "too_many_requests"})
	if got := l.Query(Filter{}); len(got) != 0 {
		t.Fatalf("aggregated records visible before flush: %v", got)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range readLines(t, path) {
		counts[r.User] += r.Count
	}
	if diff := cmp.Diff(map[string]int{"alice": 10_000, "bob": 1}, counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if n := len(readLines(t, path)); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
}

func TestAggregateFlushedByTicker(t *testing.T) {
	t.Parallel()
	l := open(t, Options{Window: 10 * time.Millisecond})
	l.Aggregate(Record{Action: EventRefused, User: "alice", Reason: "token_unknown"})
	deadline := time.Now().Add(5 * time.Second)
	for len(l.Query(Filter{Action: EventRefused})) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("aggregated record never flushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSlogAttrs checks the keys the journal handler turns into
// AGOR_AUDIT_ACTION, AGOR_USER, AGOR_CREDENTIAL.
func TestSlogAttrs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := open(t, Options{Log: slog.New(slog.NewJSONHandler(&buf, nil))})
	l.Log(Record{Action: APIKeyRefused, User: "alice", Credential: "OPENAI_API_KEY", Reason: "credential_not_found"})
	_ = l.Close()
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%s: %v", buf.String(), err)
	}
	for k, v := range map[string]string{"audit_action": "api_key_refused", "user": "alice", "credential": "OPENAI_API_KEY", "reason": "credential_not_found", "level": "WARN"} {
		if got[k] != v {
			t.Errorf("%s = %v, want %q (entry %s)", k, got[k], v, strings.TrimSpace(buf.String()))
		}
	}
	if _, ok := got["task"]; ok {
		t.Error("empty fields must be left out")
	}
}

func TestOpenFails(t *testing.T) {
	t.Parallel()
	if _, err := Open(Options{Path: filepath.Join(t.TempDir(), "missing", "audit.jsonl")}); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}
