package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// fillFor makes a session of user's with n ended tasks of k events of
// about 1 KiB each, ended at ended, and returns the task ids.
func fillFor(t testing.TB, db *DB, user string, uid int64, sid string, ended time.Time, n, k int) []string {
	t.Helper()
	if _, err := db.CreateSession(Session{ID: sid, UnixUser: user, UID: uid, AgenticTool: "claude-code", Cwd: "/", CreatedAt: ended, UpdatedAt: ended}); err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-t%d", sid, i)
		if _, err := db.CreateTask(Task{ID: id, SessionID: sid, UnixUser: user, UID: uid, Prompt: "p", Status: Completed, CreatedAt: ended, EndedAt: ended.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		batch := make([]apiwire.StoredEvent, k)
		for j := range batch {
			batch[j] = apiwire.StoredEvent{TaskID: id, Sequence: int64(j), Timestamp: 1, Type: "text_delta", Data: data}
		}
		if _, err := db.AppendBatch(batch); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestSweepSizeFair: alice floods the store past its bound; the size
// sweep takes her oldest ended tasks and never bob's, though his ended
// first and is the oldest in the store.
func TestSweepSizeFair(t *testing.T) {
	db := openTest(t, "")
	base := now().Add(-time.Hour)
	bobs := fillFor(t, db, "bob", 1002, "bob-s", base, 2, 50)
	alices := fillFor(t, db, "alice", 1001, "alice-s", base.Add(time.Minute), 40, 100)
	const bound = 4 << 20
	sw, err := db.Sweep(Retention{MaxBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	used, _ := db.usedBytes()
	t.Logf("swept %+v, %d bytes in use", sw, used)
	for _, id := range bobs {
		if _, err := db.GetTask(id); err != nil {
			t.Errorf("bob's ended task %s, within his share, removed: %v", id, err)
		}
	}
	if _, err := db.GetTask(alices[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice's oldest task kept: %v", err)
	}
	if _, err := db.GetTask(alices[len(alices)-1]); err != nil {
		t.Errorf("alice's newest task removed: %v", err)
	}
	if used > bound {
		t.Errorf("%d bytes in use, bound %d", used, bound)
	}
}

// TestSweepSizeKeepsThoseWithinShare: when everyone over their share
// has only running work left, the store stays over its bound rather than
// take a person's work who is within theirs.
func TestSweepSizeKeepsThoseWithinShare(t *testing.T) {
	db := openTest(t, "")
	base := now().Add(-time.Hour)
	bobs := fillFor(t, db, "bob", 1002, "bob-s", base, 1, 20)
	alices := fillFor(t, db, "alice", 1001, "alice-s", base, 10, 100)
	if _, err := db.w.Exec(`UPDATE tasks SET status = 'running', ended_at = 0 WHERE unix_user = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sweep(Retention{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for _, id := range append(bobs, alices...) {
		if _, err := db.GetTask(id); err != nil {
			t.Errorf("task %s removed: %v", id, err)
		}
	}
}

// TestRawStoredOnce: the events derived from one agent line carry the
// line each, as they came, but the store keeps it once; the task's
// event_bytes and the person's EventBytes count it once.
func TestRawStoredOnce(t *testing.T) {
	db := openTest(t, "")
	if _, err := db.CreateSession(Session{ID: "s1", UnixUser: "alice", UID: 1001, AgenticTool: "claude-code", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTask(Task{ID: "t1", SessionID: "s1", UnixUser: "alice", UID: 1001, Prompt: "p", Status: Running}); err != nil {
		t.Fatal(err)
	}
	raw := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("y", 100000) + `"}]}}`
	in := []json.RawMessage{
		json.RawMessage(`{"type":"message_start","data":{"role":"assistant"},"raw":` + raw + `}`),
		json.RawMessage(`{"type":"text_delta","data":{"text":"` + strings.Repeat("y", 100000) + `"},"raw":` + raw + `}`),
		json.RawMessage(`{"type":"message_stop","data":{"role":"assistant"},"raw":` + raw + `}`),
		json.RawMessage(`{"type":"usage","data":{"input_tokens":1},"raw":{"short":true}}`),
	}
	var added int64
	for i, d := range in {
		n, err := db.AppendSized(apiwire.StoredEvent{TaskID: "t1", Sequence: int64(i), Timestamp: 1, Type: "x", Data: d})
		if err != nil {
			t.Fatal(err)
		}
		added += n
	}
	got, err := db.Events("t1", -1, 0)
	if err != nil || len(got) != len(in) {
		t.Fatalf("events: %d, %v", len(got), err)
	}
	for i := range in {
		var want, have any
		_ = json.Unmarshal(in[i], &want)
		if err := json.Unmarshal(got[i].Data, &have); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, got[i].Data)
		}
		if fmt.Sprint(want) != fmt.Sprint(have) {
			t.Errorf("event %d changed: %.200s", i, got[i].Data)
		}
	}
	if limit := int64(2*len(raw) + 100000 + 1000); added > limit {
		t.Errorf("%d bytes stored; the raw line (%d bytes) is kept more than once", added, len(raw))
	}
	var rows int
	_ = db.r.QueryRow(`SELECT count(*) FROM event_raws`).Scan(&rows)
	held, err := db.EventBytes("alice", 1001)
	if rows != 1 || err != nil || held != added {
		t.Errorf("%d raw rows (want 1); alice holds %d, %v; added %d", rows, held, err, added)
	}
	page, err := db.EventPage("t1", -1, 500, 1)
	if err != nil || len(page) != 1 {
		t.Errorf("a page of 1 byte: %d events, %v; want the one", len(page), err)
	}
}

// TestUpgradeKeepsEvents: a store filled by the previous schema (raw
// lines inline in each event) opens with every event as it was, and its
// tasks' event bytes counted.
func TestUpgradeKeepsEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agor.db")
	old, err := sql.Open("sqlite", dsn(path, ""))
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{}, migrations[:4]...)
	stmts = append(stmts, "PRAGMA user_version = 4",
		`INSERT INTO sessions (id, unix_user, agentic_tool, cwd, created_at, updated_at, unix_uid) VALUES ('s1', 'alice', 'claude-code', '/', 1, 1, 1001)`,
		`INSERT INTO tasks (id, session_id, unix_user, prompt, status, created_at, ended_at, unix_uid) VALUES ('t1', 's1', 'alice', 'p', 'completed', 2, 3, 1001)`)
	data := []string{
		`{"type":"text_delta","data":{"text":"hi"},"raw":{"type":"assistant","text":"` + strings.Repeat("z", 600) + `"}}`,
		`{"type":"message_stop","data":{"role":"assistant"}}`,
	}
	for i, d := range data {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (task_id, sequence, timestamp, event_type, event_data) VALUES ('t1', %d, 4, 'x', '%s')`, i, d))
	}
	for _, s := range stmts {
		if _, err := old.Exec(s); err != nil {
			t.Fatalf("%.80s: %v", s, err)
		}
	}
	old.Close()
	db := openTest(t, path)
	got, err := db.Events("t1", -1, 0)
	if err != nil || len(got) != 2 || string(got[0].Data) != data[0] || string(got[1].Data) != data[1] {
		t.Fatalf("after the upgrade: %v %+v", err, got)
	}
	if n, err := db.EventBytes("alice", 1001); err != nil || n != int64(len(data[0])+len(data[1])) {
		t.Errorf("alice's event bytes %d, %v; want %d", n, err, len(data[0])+len(data[1]))
	}
	if err := db.Append(apiwire.StoredEvent{TaskID: "t1", Sequence: 2, Timestamp: 5, Type: "x", Data: json.RawMessage(data[0])}); err != nil {
		t.Fatalf("append after the upgrade: %v", err)
	}
}
