package store

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// TestSessionEnvironment: a database of the release before environments
// (migration 7) opens with its sessions on the host (""), and a session
// made in an environment reads back with it.
func TestSessionEnvironment(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agor.db")
	old, err := sql.Open("sqlite", dsn(path, "", "foreign_keys(1)"))
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{}, migrations[:7]...)
	stmts = append(stmts, "PRAGMA user_version = 7",
		`INSERT INTO sessions (id, unix_user, agentic_tool, cwd, created_at, updated_at, unix_uid)
			VALUES ('s-old', 'alice', 'claude-code', '/home/alice', 1, 1, 1000)`)
	for _, s := range stmts {
		if _, err := old.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	old.Close()
	db := openTest(t, path)
	if got := userVersion(t, db); got != len(migrations) {
		t.Fatalf("user_version = %d, want %d", got, len(migrations))
	}
	s, err := db.GetSession("s-old")
	if err != nil || s.Environment != "" || s.UID != 1000 {
		t.Fatalf("the old session: %+v, %v", s, err)
	}
	if _, err := db.CreateSession(Session{ID: "s-py", UnixUser: "alice", UID: 1000, Environment: "py313"}); err != nil {
		t.Fatal(err)
	}
	s, err = db.GetSession("s-py")
	if err != nil || s.Environment != "py313" {
		t.Fatalf("a session in py313 reads back as %+v, %v", s, err)
	}
	s.Status = "running"
	if s, err = db.UpdateSession(s); err != nil || s.Environment != "py313" {
		t.Fatalf("after an update: %+v, %v", s, err)
	}
}
