package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/identity"
)

// previousVersion makes a database as the previous daemon left it: the
// schema of its migrations (1 and 2) and rows without uids: alice's
// session with a task and events, bob's (whose account is gone by the
// upgrade) and carol's (whose directory does not answer).
func previousVersion(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agor.db")
	old, err := sql.Open("sqlite", dsn(path, "", "foreign_keys(1)"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	stmts := []string{migrations[0], migrations[1], "PRAGMA user_version = 2"}
	for _, u := range []string{"alice", "bob", "carol"} {
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO sessions (id, unix_user, agentic_tool, cwd, created_at, updated_at)
				VALUES ('s-%[1]s', '%[1]s', 'claude-code', '/home/%[1]s', 1, 1)`, u),
			fmt.Sprintf(`INSERT INTO tasks (id, session_id, unix_user, prompt, status, created_at)
				VALUES ('t-%[1]s', 's-%[1]s', '%[1]s', 'secret plans of %[1]s', 'completed', 2)`, u),
			fmt.Sprintf(`INSERT INTO events (task_id, sequence, timestamp, event_type, event_data)
				VALUES ('t-%[1]s', 0, 3, 'text', '{"text":"hi"}'), ('t-%[1]s', 1, 4, 'text', NULL)`, u))
	}
	stmts = append(stmts, `INSERT INTO audit (time, action, unix_user) VALUES (5, 'api_key_issued', 'alice')`)
	for _, s := range stmts {
		if _, err := old.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// TestUpgradeAdoptsUIDs: a database of the previous version opens with
// everything still there; Adopt gives alice's rows her uid, marks bob's
// (no account) as orphans for good, and leaves carol's (no answer) for
// the next try.
func TestUpgradeAdoptsUIDs(t *testing.T) {
	t.Parallel()
	db := openTest(t, previousVersion(t))
	if got := userVersion(t, db); got != len(migrations) {
		t.Fatalf("user_version = %d, want %d", got, len(migrations))
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		s, err := db.GetSession("s-" + u)
		if err != nil || s.UID != NoUID || s.Cwd != "/home/"+u {
			t.Fatalf("%s's session after upgrade: %+v, %v", u, s, err)
		}
		if evs, err := db.Events("t-"+u, -1, 0); err != nil || len(evs) != 2 {
			t.Fatalf("%s's events after upgrade: %d, %v", u, len(evs), err)
		}
	}
	if recs, err := db.QueryAudit(audit.Filter{User: "alice", UID: audit.UIDOf(1000)}); err != nil || len(recs) != 1 {
		t.Fatalf("old audit record: %v, %v", recs, err)
	}

	ldap := errors.Join(identity.ErrUnavailable, errors.New("ldap down"))
	dir := identity.Users(map[string]uint32{"alice": 1000})
	dir.Errors = map[string]error{"carol": ldap} // its directory does not answer
	a, err := db.Adopt(context.Background(), identity.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint32{"alice": 1000}, a.Adopted); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bob"}, a.Orphaned); diff != "" {
		t.Errorf("orphaned (-want +got):\n%s", diff)
	}
	if _, ok := a.Pending["carol"]; !ok || len(a.Pending) != 1 {
		t.Errorf("pending = %v, want carol", a.Pending)
	}
	wantUIDs(t, db, map[string]int64{"alice": 1000, "bob": NoUID, "carol": NoUID})
	if others, _ := db.OtherUIDs("carol", 1002); len(others) != 0 {
		t.Errorf("carol's rows waiting for adoption count as another account's: %v", others)
	}
	if others, _ := db.OtherUIDs("bob", 2000); !cmp.Equal(others, []int64{NoUID}) {
		t.Errorf("OtherUIDs(bob) = %v, want [-1]", others)
	}
	if list, _ := db.ListSessionsOf("alice", 1000, 0, ""); len(list) != 1 {
		t.Errorf("alice's sessions = %v", list)
	}

	// Later bob's name is given to someone new, and carol's directory
	// answers: carol's rows are hers; bob's stay orphans.
	a, err = db.Adopt(context.Background(), identity.New(identity.Users(map[string]uint32{"alice": 1000, "bob": 2000, "carol": 1002})))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint32{"carol": 1002}, a.Adopted); diff != "" {
		t.Errorf("second adoption (-want +got):\n%s", diff)
	}
	wantUIDs(t, db, map[string]int64{"alice": 1000, "bob": NoUID, "carol": 1002})
	if list, _ := db.ListSessionsOf("bob", 2000, 0, ""); len(list) != 0 {
		t.Errorf("the new bob sees %v", list)
	}
	if list, _ := db.ListSessions("bob", 0, ""); len(list) != 1 {
		t.Errorf("an admin sees %d of bob's sessions, want 1", len(list))
	}
}

func wantUIDs(t *testing.T, db *DB, want map[string]int64) {
	t.Helper()
	for u, uid := range want {
		s, err := db.GetSession("s-" + u)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := db.GetTask("t-" + u)
		if err != nil {
			t.Fatal(err)
		}
		if s.UID != uid || tk.UID != uid {
			t.Errorf("%s: session uid %d, task uid %d, want %d", u, s.UID, tk.UID, uid)
		}
	}
}

// TestOwnersAndPurge: one name, two accounts; purging the earlier one's
// rows leaves the current one's.
func TestOwnersAndPurge(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	mk := func(id string, uid int64, events int) {
		t.Helper()
		if _, err := db.CreateSession(Session{ID: "s" + id, UnixUser: "dave", UID: uid, AgenticTool: "codex"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateTask(Task{ID: "t" + id, SessionID: "s" + id, UnixUser: "dave", UID: uid, Status: Completed}); err != nil {
			t.Fatal(err)
		}
		if events > 0 {
			if _, err := db.AppendBatch(evs("t"+id, 0, int64(events-1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("old1", 1000, 3)
	mk("old2", 1000, 0)
	mk("new", 2000, 1)
	mk("gone", NoUID, 2)
	got, err := db.Owners()
	if err != nil {
		t.Fatal(err)
	}
	want := []Owner{
		{Name: "dave", UID: NoUID, Sessions: 1, Tasks: 1, Events: 2},
		{Name: "dave", UID: 1000, Sessions: 2, Tasks: 2, Events: 3},
		{Name: "dave", UID: 2000, Sessions: 1, Tasks: 1, Events: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("owners (-want +got):\n%s", diff)
	}
	if others, err := db.OtherUIDs("dave", 2000); err != nil || !cmp.Equal(others, []int64{NoUID, 1000}) {
		t.Fatalf("OtherUIDs = %v, %v", others, err)
	}
	p, err := db.Purge("dave", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1], p); diff != "" {
		t.Errorf("purged (-want +got):\n%s", diff)
	}
	if _, err := db.Purge("dave", NoUID); err != nil {
		t.Fatal(err)
	}
	if others, err := db.OtherUIDs("dave", 2000); err != nil || len(others) != 0 {
		t.Fatalf("OtherUIDs after purge = %v, %v", others, err)
	}
	got, _ = db.Owners()
	if diff := cmp.Diff(want[2:], got); diff != "" {
		t.Errorf("owners after purge (-want +got):\n%s", diff)
	}
	for _, id := range []string{"old1", "old2", "gone"} {
		if _, err := db.GetTask("t" + id); !errors.Is(err, ErrNotFound) {
			t.Errorf("task t%s after purge: %v", id, err)
		}
		if evs, _ := db.Events("t"+id, -1, 0); len(evs) != 0 {
			t.Errorf("events of t%s after purge: %d", id, len(evs))
		}
	}
	if evs, _ := db.Events("tnew", -1, 0); len(evs) != 1 {
		t.Errorf("the current account's events: %d, want 1", len(evs))
	}
}
