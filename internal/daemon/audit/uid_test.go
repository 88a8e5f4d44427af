package audit

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUIDRecorded: the uid goes to the file (a number, left out when
// none), to the journal as "uid"/"stored_uid" (AGOR_UID, AGOR_STORED_UID),
// and root's uid 0 is a uid, not "none".
func TestUIDRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var buf bytes.Buffer
	l := open(t, Options{Path: path, Log: slog.New(slog.NewJSONHandler(&buf, nil))})
	recs := []Record{
		{Action: AccountMismatch, User: "alice", UID: UIDOf(2000), StoredUID: StoredUID(1000), Session: "s1"},
		{Action: APIKeyIssued, User: "root", UID: UIDOf(0)},
		{Action: TaskEnded, Task: "t1"},
	}
	for _, r := range recs {
		l.Log(r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	for i := range got {
		got[i].Time = recs[i].Time
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, last map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"audit_action": "account_mismatch", "uid": "2000", "stored_uid": "1000", "level": "WARN"} {
		if first[k] != v {
			t.Errorf("%s = %v, want %q", k, first[k], v)
		}
	}
	if _, ok := last["uid"]; ok {
		t.Errorf("a record without a uid has uid in the journal: %s", lines[2])
	}
	if !strings.Contains(lines[1], `"uid":"0"`) {
		t.Errorf("root's uid missing: %s", lines[1])
	}
}

// TestFilterUID: a user's query leaves out records of an earlier account
// of the same name (another uid), keeps their own and those with none.
func TestFilterUID(t *testing.T) {
	t.Parallel()
	l := open(t, Options{})
	old := Record{Action: APIKeyIssued, User: "alice", UID: UIDOf(1000), Task: "old"}
	mine := Record{Action: APIKeyIssued, User: "alice", UID: UIDOf(2000), Task: "new"}
	none := Record{Action: ExecutorStarted, User: "alice"}
	for _, r := range []Record{old, mine, none} {
		l.Log(r)
	}
	var tasks []string
	for _, r := range l.Query(Filter{User: "alice", UID: UIDOf(2000)}) {
		tasks = append(tasks, string(r.Action)+"/"+r.Task)
	}
	if diff := cmp.Diff([]string{"api_key_issued/new", "executor_started/"}, tasks); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if n := len(l.Query(Filter{User: "alice"})); n != 3 {
		t.Errorf("admin query found %d records, want 3", n)
	}
}

func TestStoredUID(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{-1: "", 0: "0", 4242: "4242", 1 << 40: ""} {
		if got := StoredUID(in).String(); got != want {
			t.Errorf("StoredUID(%d) = %q, want %q", in, got, want)
		}
	}
}
