package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// capPages caps the database at the pages it has (PRAGMA max_page_count):
// SQLite then answers a write that needs a page more SQLITE_FULL, as on a
// full disk. uncap undoes it.
func capPages(t *testing.T, db *DB) {
	t.Helper()
	if _, err := db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := db.w.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
}

func uncap(t *testing.T, db *DB) {
	t.Helper()
	if _, err := db.w.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
}

// TestFullStore: writes SQLite refuses for want of space wrap ErrFull and
// make one episode however many fail; a task's end and its session's
// status are kept in memory and shown by reads meanwhile, and Reconcile
// writes them once there is room, which ends the episode.
func TestFullStore(t *testing.T) {
	db := openTest(t, "")
	mustSession(t, db, "s1", "alice")
	if _, err := db.CreateTask(Task{ID: "t1", SessionID: "s1", UnixUser: "alice", Status: Running}); err != nil {
		t.Fatal(err)
	}
	capPages(t, db)
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 64<<10) + `"}`)
	for i := range 5 {
		err := db.Append(apiwire.StoredEvent{TaskID: "t1", Sequence: int64(i), Timestamp: 1, Type: "text_delta", Data: big})
		if !errors.Is(err, ErrFull) {
			t.Fatalf("append %d to a full store: %v, want ErrFull", i, err)
		}
	}
	if sp := db.Space(); !sp.Full || sp.Episodes != 1 || sp.Failures != 5 {
		t.Fatalf("after 5 refused writes: %+v, want full, 1 episode, 5 failures", sp)
	}
	if err := db.RoomForWork(); !errors.Is(err, ErrFull) {
		t.Errorf("new work in an episode: %v, want ErrFull", err)
	}
	err := db.FinishTask("t1", Finish{Status: Incomplete, Result: big, Dropped: 5})
	if !errors.Is(err, ErrFull) {
		t.Fatalf("finish on a full store: %v", err)
	}
	sess, _ := db.GetSession("s1")
	sess.Status = string(Incomplete)
	sess.AgentSessionID = strings.Repeat("a", 64<<10) // a page more
	if _, err := db.UpdateSession(sess); !errors.Is(err, ErrFull) {
		t.Fatalf("session update on a full store: %v", err)
	}
	if got, _ := db.GetTask("t1"); got.Status != Incomplete || got.Dropped != 5 || got.EndedAt.IsZero() {
		t.Errorf("the task as read while full: %s dropped %d ended %v", got.Status, got.Dropped, got.EndedAt)
	}
	if list, _ := db.ListSessions("", 0, ""); len(list) != 1 || list[0].Status != "incomplete" {
		t.Errorf("the session as listed while full: %+v", list)
	}
	if n, err := db.Reconcile(); err == nil || n != 0 {
		t.Errorf("reconcile with no room: %d, %v", n, err)
	}
	uncap(t, db)
	if n, err := db.Reconcile(); err != nil || n != 2 {
		t.Fatalf("reconcile with room: %d statuses, %v; want 2", n, err)
	}
	if sp := db.Space(); sp.Full || sp.Pending != 0 || sp.Episodes != 1 {
		t.Errorf("after reconcile: %+v", sp)
	}
	// Written, not only remembered: a new handle reads them from disk.
	var status string
	var dropped int64
	if err := db.r.QueryRow(`SELECT status, dropped_events FROM tasks WHERE id = 't1'`).Scan(&status, &dropped); err != nil || status != "incomplete" || dropped != 5 {
		t.Errorf("on disk: %s %d %v", status, dropped, err)
	}
	if err := db.r.QueryRow(`SELECT status FROM sessions WHERE id = 's1'`).Scan(&status); err != nil || status != "incomplete" {
		t.Errorf("session on disk: %s %v", status, err)
	}
}

// TestFloor: below store.min_free_bytes new work is refused; events stop
// only below half of it, which is kept for the tasks' ends.
func TestFloor(t *testing.T) {
	db := openTest(t, "")
	mustSession(t, db, "s1", "alice")
	if _, err := db.CreateTask(Task{ID: "t1", SessionID: "s1", UnixUser: "alice", Status: Running}); err != nil {
		t.Fatal(err)
	}
	free := int64(100 << 20)
	db.space.statfs = func(string) (int64, error) { return free, nil }
	db.SetFloor(64 << 20)
	if err := db.RoomForWork(); err != nil {
		t.Fatalf("100 MiB free, floor 64 MiB: %v", err)
	}
	free = 40 << 20
	if err := db.RoomForWork(); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "min_free_bytes") {
		t.Errorf("40 MiB free, floor 64 MiB: %v, want ErrFull naming the key", err)
	}
	ev := apiwire.StoredEvent{TaskID: "t1", Sequence: 0, Timestamp: 1, Type: "x", Data: json.RawMessage(`{}`)}
	if err := db.Append(ev); err != nil {
		t.Errorf("an event at 40 MiB free (half the floor is 32): %v", err)
	}
	free = 20 << 20
	ev.Sequence = 1
	if err := db.Append(ev); !errors.Is(err, ErrFull) {
		t.Errorf("an event at 20 MiB free: %v, want ErrFull", err)
	}
	if err := db.FinishTask("t1", Finish{Status: Incomplete, Dropped: 1}); err != nil {
		t.Errorf("the task's end below the floor: %v", err)
	}
	if sp := db.Space(); !sp.Full || sp.Episodes != 1 {
		t.Errorf("below the floor: %+v", sp)
	}
	free = 200 << 20
	if _, err := db.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if err := db.RoomForWork(); err != nil {
		t.Errorf("space back: %v", err)
	}
}

// TestSettleSessions: at start a session left "running" with no live task
// takes its latest task's status; one with a live task is left alone.
func TestSettleSessions(t *testing.T) {
	db := openTest(t, "")
	for _, s := range []string{"s1", "s2", "s3"} {
		mustSession(t, db, s, "alice")
		sess, _ := db.GetSession(s)
		sess.Status = "running"
		if _, err := db.UpdateSession(sess); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range []Task{{ID: "a", SessionID: "s1", Status: Completed}, {ID: "b", SessionID: "s1", Status: Running},
		{ID: "c", SessionID: "s2", Status: Running}} {
		tk.UnixUser = "alice"
		if _, err := db.CreateTask(tk); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.MarkInterrupted(); err != nil || n != 2 {
		t.Fatalf("interrupted %d, %v", n, err)
	}
	if _, err := db.CreateTask(Task{ID: "d", SessionID: "s2", UnixUser: "alice", Status: Running}); err != nil {
		t.Fatal(err)
	}
	n, err := db.SettleSessions()
	if err != nil || n != 2 {
		t.Fatalf("settled %d, %v; want 2 (s1, s3)", n, err)
	}
	for id, want := range map[string]string{"s1": "interrupted", "s2": "running", "s3": "idle"} {
		if s, _ := db.GetSession(id); s.Status != want {
			t.Errorf("session %s: %q, want %q", id, s.Status, want)
		}
	}
}

func mustSession(t *testing.T, db *DB, id, user string) {
	t.Helper()
	if _, err := db.CreateSession(Session{ID: id, UnixUser: user, AgenticTool: "claude-code", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
}
