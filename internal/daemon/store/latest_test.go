package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestIdleLatestSession: the account's session used last in the
// environment asked, none while a task of hers there is queued or
// running; another person's, another environment's and an earlier
// account's of the same name are never it.
func TestIdleLatestSession(t *testing.T) {
	t.Parallel()
	db := openTest(t, filepath.Join(t.TempDir(), "agor.db"))
	at := time.Unix(1_000_000, 0)
	for i, s := range []Session{
		{ID: "old", UnixUser: "alice", UID: 1000},
		{ID: "last", UnixUser: "alice", UID: 1000},
		{ID: "py", UnixUser: "alice", UID: 1000, Environment: "py"},
		{ID: "bobs", UnixUser: "bob", UID: 1001},
		{ID: "before", UnixUser: "alice", UID: 999}, // an earlier account named alice
	} {
		s.CreatedAt, s.UpdatedAt = at, at.Add(time.Duration(i)*time.Minute)
		if _, err := db.CreateSession(s); err != nil {
			t.Fatal(err)
		}
	}
	want := func(env, id string) {
		t.Helper()
		s, err := db.IdleLatestSession("alice", 1000, env)
		if id == "" {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("in %q: %+v, %v; want none", env, s, err)
			}
			return
		}
		if err != nil || s.ID != id {
			t.Errorf("in %q: %q, %v; want %q", env, s.ID, err, id)
		}
	}
	want("", "last")
	want("py", "py")
	want("other", "")
	if _, err := db.CreateTask(Task{ID: "t1", SessionID: "old", UnixUser: "alice", UID: 1000, Prompt: "p"}); err != nil {
		t.Fatal(err)
	}
	want("", "") // a prompt is on its way: nothing to predict
	want("py", "py")
	if err := db.FinishTask("t1", Finish{Status: Completed}); err != nil {
		t.Fatal(err)
	}
	want("", "last")
}
