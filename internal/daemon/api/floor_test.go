package api

import (
	"encoding/json"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// A follow-up in a session that ran confined is confined at least as
// much, whatever it asks, even after the executor (which also remembers
// it) restarted: the daemon reads it from the session's stored results.
func TestSessionConfinedFloor(t *testing.T) {
	e := newAccountsEnv(t, users{"alice": alice})
	if _, err := e.db.CreateSession(store.Session{ID: "s1", UnixUser: "alice", UID: alice, AgenticTool: "gemini"}); err != nil {
		t.Fatal(err)
	}
	body := func() *apiwire.PromptBody { return &apiwire.PromptBody{SessionID: "s1", Sandbox: "off"} }
	b := body()
	if _, err := e.srv.session("alice", alice, b); err != nil || b.Sandbox != "off" {
		t.Fatalf("no confined task yet: %q, %v", b.Sandbox, err)
	}
	for i, level := range []string{"workspace", "", "off"} {
		res, _ := json.Marshal(map[string]any{"status": "completed", "sandbox": map[string]any{"level": level}})
		if level == "" {
			res = json.RawMessage(`{"status":"failed"}`)
		}
		id := []string{"t1", "t2", "t3"}[i]
		if _, err := e.db.CreateTask(store.Task{ID: id, SessionID: "s1", UnixUser: "alice", UID: alice, Prompt: "p", Status: store.Completed, Result: res}); err != nil {
			t.Fatal(err)
		}
	}
	b = body()
	if _, err := e.srv.session("alice", alice, b); err != nil || b.Sandbox != "workspace" {
		t.Fatalf("after a workspace turn, a follow-up asking off runs at %q (%v), want workspace", b.Sandbox, err)
	}
	b.Sandbox = "read-only"
	if _, err := e.srv.session("alice", alice, b); err != nil || b.Sandbox != "read-only" {
		t.Fatalf("a stricter ask stays: %q", b.Sandbox)
	}
}
