package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

func openTest(t testing.TB, path string) *DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "agor.db")
	}
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// seed creates session s1 for alice and a task per id in it.
func seed(t testing.TB, db *DB, status TaskStatus, ids ...string) {
	t.Helper()
	if _, err := db.GetSession("s1"); errors.Is(err, ErrNotFound) {
		if _, err := db.CreateSession(Session{ID: "s1", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "/home/alice"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if _, err := db.CreateTask(Task{ID: id, SessionID: "s1", UnixUser: "alice", Prompt: "hi", Status: status}); err != nil {
			t.Fatal(err)
		}
	}
}

func userVersion(t *testing.T, db *DB) int {
	t.Helper()
	var v int
	if err := db.w.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenPragmas(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	for _, tc := range []struct {
		pragma string
		db     *sql.DB
		want   string
	}{
		{"journal_mode", db.w, "wal"},
		{"journal_mode", db.r, "wal"},
		{"synchronous", db.w, "1"}, // NORMAL
		{"foreign_keys", db.w, "1"},
		{"foreign_keys", db.r, "1"},
		{"busy_timeout", db.w, "5000"},
		{"busy_timeout", db.r, "5000"},
		{"query_only", db.r, "1"},
		{"query_only", db.w, "0"},
	} {
		var got string
		if err := tc.db.QueryRow("PRAGMA " + tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %q, want %q", tc.pragma, got, tc.want)
		}
	}
	if _, err := db.r.Exec("DELETE FROM sessions"); err == nil {
		t.Error("read pool accepted a write")
	}
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agor.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := userVersion(t, db); got != len(migrations) {
		t.Fatalf("user_version = %d, want %d", got, len(migrations))
	}
	seed(t, db, Queued, "t1")
	db.Close()

	for i := range 3 { // reopening applies nothing and keeps the data
		db, err = Open(path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if got := userVersion(t, db); got != len(migrations) {
			t.Fatalf("reopen %d: user_version = %d", i, got)
		}
		if _, err := db.GetTask("t1"); err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		db.Close()
	}

	// A database from a newer daemon is refused, and left alone.
	db, _ = Open(path)
	if _, err := db.w.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(path); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open newer schema: err = %v, want ErrSchemaTooNew", err)
	}
}

func TestMigrationStepwise(t *testing.T) {
	t.Parallel()
	// A database at version 1 (an older daemon's) gains the audit table.
	path := filepath.Join(t.TempDir(), "agor.db")
	old, err := sql.Open("sqlite", dsn(path, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(migrations[0] + "; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	db := openTest(t, path)
	if got := userVersion(t, db); got != len(migrations) {
		t.Fatalf("user_version = %d", got)
	}
	if _, err := db.QueryAudit(audit0()); err != nil {
		t.Fatalf("audit table missing after migration: %v", err)
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := Session{ID: "s1", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "/home/alice/p", Model: "opus",
		PermissionMode: "ask", Status: "idle", CreatedAt: at}
	created, err := db.CreateSession(in)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.UpdatedAt = at
	if d := cmp.Diff(want, created); d != "" {
		t.Errorf("CreateSession (-want +got):\n%s", d)
	}
	got, err := db.GetSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GetSession (-want +got):\n%s", d)
	}
	if _, err := db.CreateSession(in); !errors.Is(err, ErrExists) {
		t.Errorf("CreateSession twice: err = %v, want ErrExists", err)
	}

	upd := got
	upd.Model, upd.Status, upd.AgentSessionID = "sonnet", "busy", "agent-123"
	upd.UnixUser = "mallory" // never changes
	after, err := db.UpdateSession(upd)
	if err != nil {
		t.Fatal(err)
	}
	if after.UnixUser != "alice" || after.Model != "sonnet" || after.AgentSessionID != "agent-123" ||
		!after.CreatedAt.Equal(at) || !after.UpdatedAt.After(at) {
		t.Errorf("UpdateSession = %+v", after)
	}

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"get missing", second(db.GetSession("nope")), ErrNotFound},
		{"update missing", second(db.UpdateSession(Session{ID: "nope"})), ErrNotFound},
		{"create without user", second(db.CreateSession(Session{ID: "x"})), ErrInvalid},
		{"list after missing", second(db.ListSessions("", 10, "nope")), ErrNotFound},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestListSessionsPaging(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	base := time.Unix(1_700_000_000, 0)
	var all, alice []string
	for i := range 25 {
		user := []string{"alice", "bob"}[i%2]
		id := fmt.Sprintf("s%02d", 24-i) // ids not in creation order
		// Sessions 10 and 11 share a creation time: the ID breaks the tie.
		at := base.Add(time.Duration(min(i, 10)+max(0, i-11)) * time.Second)
		if _, err := db.CreateSession(Session{ID: id, UnixUser: user, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		if user == "alice" {
			alice = append(alice, id)
		}
	}
	// s13 and s14 were created at the same time; order is (created_at, id).
	all[10], all[11] = all[11], all[10]
	for _, tc := range []struct {
		user  string
		limit int
		want  []string
	}{
		{"", 7, all},
		{"", 1, all},
		{"", 100, all},
		{"", 0, all},
		{"alice", 4, alice},
		{"bob", 3, filter(all, alice)},
		{"carol", 5, nil},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.user, tc.limit), func(t *testing.T) {
			var got []string
			after := ""
			for page := 0; ; page++ {
				ss, err := db.ListSessions(tc.user, tc.limit, after)
				if err != nil {
					t.Fatal(err)
				}
				if tc.limit > 0 && len(ss) > tc.limit {
					t.Fatalf("page %d has %d sessions, limit %d", page, len(ss), tc.limit)
				}
				if len(ss) == 0 {
					break
				}
				for _, s := range ss {
					got = append(got, s.ID)
				}
				after = ss[len(ss)-1].ID
				if page > 100 {
					t.Fatal("paging does not end")
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("pages (-want +got):\n%s", d)
			}
		})
	}
}

func filter(all, drop []string) []string {
	skip := map[string]bool{}
	for _, s := range drop {
		skip[s] = true
	}
	var out []string
	for _, s := range all {
		if !skip[s] {
			out = append(out, s)
		}
	}
	return out
}

func TestTasks(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, "", "t1")
	got, err := db.GetTask("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Queued || !got.StartedAt.IsZero() || !got.EndedAt.IsZero() || got.Result != nil {
		t.Fatalf("new task = %+v", got)
	}
	if err := db.SetTaskStatus("t1", Running, nil, ""); err != nil {
		t.Fatal(err)
	}
	running, _ := db.GetTask("t1")
	if running.Status != Running || running.StartedAt.IsZero() || !running.EndedAt.IsZero() {
		t.Fatalf("running task = %+v", running)
	}
	res := json.RawMessage(`{"stop_reason":"end_turn","usage":{"input_tokens":3}}`)
	if err := db.SetTaskStatus("t1", Completed, res, ""); err != nil {
		t.Fatal(err)
	}
	done, _ := db.GetTask("t1")
	if done.Status != Completed || !done.StartedAt.Equal(running.StartedAt) || done.EndedAt.IsZero() {
		t.Fatalf("completed task = %+v", done)
	}
	if d := cmp.Diff(res, done.Result, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"ended task keeps its status", db.SetTaskStatus("t1", Failed, nil, "late"), ErrTaskEnded},
		{"unknown status", db.SetTaskStatus("t1", "paused", nil, ""), ErrInvalid},
		{"result not JSON", db.SetTaskStatus("t1", Failed, json.RawMessage("{"), ""), ErrInvalid},
		{"missing task", db.SetTaskStatus("nope", Running, nil, ""), ErrNotFound},
		{"get missing", second(db.GetTask("nope")), ErrNotFound},
		{"task of missing session", second(db.CreateTask(Task{ID: "t9", SessionID: "nope", UnixUser: "alice"})), ErrNotFound},
		{"duplicate task", second(db.CreateTask(Task{ID: "t1", SessionID: "s1", UnixUser: "alice"})), ErrExists},
		{"create with bad status", second(db.CreateTask(Task{ID: "t8", SessionID: "s1", UnixUser: "alice", Status: "x"})), ErrInvalid},
		{"list after missing", second(db.ListTasks("s1", 1, "nope")), ErrNotFound},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if after, _ := db.GetTask("t1"); after.Status != Completed || after.Error != "" {
		t.Errorf("ended task changed: %+v", after)
	}
	if err := db.SetTaskStatus("t1", Failed, nil, ""); err == nil {
		t.Error("final status changed")
	}
}

func TestFailedTaskError(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, Running, "t1")
	if err := db.SetTaskStatus("t1", Failed, nil, "agent crashed"); err != nil {
		t.Fatal(err)
	}
	got, _ := db.GetTask("t1")
	if got.Status != Failed || got.Error != "agent crashed" || got.Result != nil || got.StartedAt.IsZero() {
		t.Errorf("failed task = %+v", got)
	}
}

func TestListTasksPaging(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, Queued)
	if _, err := db.CreateSession(Session{ID: "s2", UnixUser: "bob"}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 9 {
		id := fmt.Sprintf("t%d", 9-i)
		at := time.Unix(1_700_000_000+int64(i), 0)
		if _, err := db.CreateTask(Task{ID: id, SessionID: "s1", UnixUser: "alice", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
		if _, err := db.CreateTask(Task{ID: "other" + id, SessionID: "s2", UnixUser: "bob", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{0, 1, 2, 4, 9, 10} {
		var got []string
		after := ""
		for {
			ts, err := db.ListTasks("s1", limit, after)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) == 0 {
				break
			}
			for _, tk := range ts {
				got = append(got, tk.ID)
			}
			after = ts[len(ts)-1].ID
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("limit %d (-want +got):\n%s", limit, d)
		}
	}
}

func TestMarkInterrupted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agor.db")
	db := openTest(t, path)
	seed(t, db, Queued, "queued")
	seed(t, db, Running, "running", "done", "failed")
	if err := db.SetTaskStatus("done", Completed, json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := db.SetTaskStatus("failed", Failed, nil, "boom"); err != nil {
		t.Fatal(err)
	}
	n, err := db.MarkInterrupted()
	if err != nil || n != 2 {
		t.Fatalf("MarkInterrupted = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]TaskStatus{"queued": Interrupted, "running": Interrupted, "done": Completed, "failed": Failed} {
		got, err := db.GetTask(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.EndedAt.IsZero() {
			t.Errorf("%s: status %s ended %v, want %s and ended", id, got.Status, got.EndedAt, want)
		}
	}
	if n, err := db.MarkInterrupted(); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted = %d, %v; want 0", n, err)
	}
}

// A new daemon takes over the tasks the last one left running: they are
// listed, skipped when the rest are marked interrupted, and where each
// one's events go on from is the highest sequence stored.
func TestRunningBeforeTakenOver(t *testing.T) {
	t.Parallel()
	db := openTest(t, filepath.Join(t.TempDir(), "agor.db"))
	seed(t, db, Queued, "queued")
	seed(t, db, Running, "kept", "lost")
	for i := range 3 {
		if err := db.Append(apiwire.StoredEvent{TaskID: "kept", Sequence: int64(i), Timestamp: 1, Type: "text_delta"}); err != nil {
			t.Fatal(err)
		}
	}
	left, err := db.RunningBefore(now())
	if err != nil || len(left) != 2 || left[0].ID != "kept" || left[1].ID != "lost" {
		t.Fatalf("RunningBefore = %+v, %v; want kept and lost", left, err)
	}
	if n, err := db.MarkInterruptedBefore(now(), "kept"); err != nil || n != 2 {
		t.Fatalf("MarkInterruptedBefore except kept = %d, %v; want 2 (queued, lost)", n, err)
	}
	if got, _ := db.GetTask("kept"); got.Status != Running {
		t.Errorf("kept: %s, want running", got.Status)
	}
	if got, _ := db.GetTask("lost"); got.Status != Interrupted {
		t.Errorf("lost: %s, want interrupted", got.Status)
	}
	if n, err := db.LastSequence("kept"); err != nil || n != 2 {
		t.Errorf("LastSequence(kept) = %d, %v; want 2", n, err)
	}
	if n, err := db.LastSequence("lost"); err != nil || n != -1 {
		t.Errorf("LastSequence(lost) = %d, %v; want -1", n, err)
	}
}
