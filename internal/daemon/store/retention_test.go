package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// fill makes session sid (last touched at touched) with n ended tasks
// (ended at ended) of k events of about 1 KiB each.
func fill(t testing.TB, db *DB, sid string, touched, ended time.Time, n, k int) []string {
	t.Helper()
	if _, err := db.CreateSession(Session{ID: sid, UnixUser: "alice", UID: 1000, AgenticTool: "claude-code", Cwd: "/", CreatedAt: touched, UpdatedAt: touched}); err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-t%d", sid, i)
		if _, err := db.CreateTask(Task{ID: id, SessionID: sid, UnixUser: "alice", UID: 1000, Prompt: "p", Status: Completed, CreatedAt: ended, EndedAt: ended}); err != nil {
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

// TestSweep: tasks and events past the age go, a live task (and its
// session) and recent work stay, and the file shrinks.
func TestSweep(t *testing.T) {
	db := openTest(t, "")
	old, recent := now().Add(-40*24*time.Hour), now()
	gone := fill(t, db, "old", recent, old, 20, 100) // a session still in use, with old tasks
	kept := fill(t, db, "new", recent, recent, 2, 10)
	fill(t, db, "stale", old, old, 1, 5) // untouched for 40 days: goes whole
	live := Task{ID: "live", SessionID: "stale2", UnixUser: "alice", UID: 1000, Prompt: "p", Status: Running, CreatedAt: old}
	fill(t, db, "stale2", old, old, 0, 0)
	if _, err := db.CreateTask(live); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(apiwire.StoredEvent{TaskID: "live", Sequence: 0, Timestamp: 1, Type: "text_delta"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Vacuum(); err != nil {
		t.Fatal(err)
	}
	month := 30 * 24 * time.Hour
	sw, err := db.Sweep(Retention{EventMaxAge: month, TaskMaxAge: month, SessionMaxAge: month})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept %+v", sw)
	if sw.Tasks != 21 || sw.Events != 2005 || sw.Sessions != 1 {
		t.Errorf("removed %d tasks, %d events, %d sessions; want 21, 2005, 1", sw.Tasks, sw.Events, sw.Sessions)
	}
	for _, id := range gone {
		if _, err := db.GetTask(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("task %s past the age: %v", id, err)
		}
	}
	for _, id := range append(kept, "live") {
		if _, err := db.GetTask(id); err != nil {
			t.Errorf("task %s: %v", id, err)
		}
	}
	if evs, _ := db.Events("live", -1, 0); len(evs) != 1 {
		t.Errorf("live task's events: %d", len(evs))
	}
	if _, err := db.GetSession("stale2"); err != nil {
		t.Errorf("session with a live task: %v", err)
	}
	if _, err := db.GetSession("stale"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stale session: %v", err)
	}
	if sw.BytesAfter >= sw.BytesBefore/2 {
		t.Errorf("store %d bytes before, %d after: did not shrink", sw.BytesBefore, sw.BytesAfter)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepSize: past the size bound the oldest ended tasks go until the
// data fits; live work stays even when it alone is over.
func TestSweepSize(t *testing.T) {
	db := openTest(t, "")
	base := now().Add(-time.Hour)
	for i := range 30 {
		fill(t, db, fmt.Sprintf("s%02d", i), base, base.Add(time.Duration(i)*time.Minute), 1, 100)
	}
	const bound = 4 << 20
	sw, err := db.Sweep(Retention{MaxBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	used, _ := db.usedBytes()
	t.Logf("swept %+v, %d bytes in use", sw, used)
	if used > bound || sw.Tasks == 0 || sw.Tasks == 30 {
		t.Fatalf("%d bytes in use after removing %d tasks, bound %d", used, sw.Tasks, bound)
	}
	if _, err := db.GetTask("s00-t0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("oldest task kept: %v", err)
	}
	if _, err := db.GetTask("s29-t0"); err != nil {
		t.Errorf("newest task removed: %v", err)
	}
}

// TestIncrementalVacuumOnOpen: every store, new or upgraded, runs with
// auto_vacuum=INCREMENTAL.
func TestIncrementalVacuumOnOpen(t *testing.T) {
	db := openTest(t, "")
	var mode int
	if err := db.w.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum %d %v, want 2", mode, err)
	}
}
