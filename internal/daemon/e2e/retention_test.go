package e2e

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// TestDaemonRetentionSweep: the daemon sweeps on its schedule: a task
// ended past the age goes with its events, a running one as old stays,
// and /v1/metrics shows the store's size and what went.
func TestDaemonRetentionSweep(t *testing.T) {
	h := startWith(t, nil, func(c *config.Config) { c.Retention.SweepIntervalS = 1 })
	name, uid := target(t)
	old := time.Now().Add(-40 * 24 * time.Hour)
	sess, err := h.d.Store().CreateSession(store.Session{ID: newTestID(), UnixUser: name, UID: int64(uid), AgenticTool: "claude-code", Cwd: ".", UpdatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	gone, live := newTestID(), newTestID()
	for _, tk := range []store.Task{
		{ID: gone, SessionID: sess.ID, UnixUser: name, UID: int64(uid), Prompt: "old", Status: store.Completed, CreatedAt: old, EndedAt: old},
		{ID: live, SessionID: sess.ID, UnixUser: name, UID: int64(uid), Prompt: "running", Status: store.Running, CreatedAt: old},
	} {
		if _, err := h.d.Store().CreateTask(tk); err != nil {
			t.Fatal(err)
		}
		for q := range int64(3) {
			if err := h.d.Store().Append(apiwire.StoredEvent{TaskID: tk.ID, Sequence: q, Timestamp: 1, Type: "text_delta"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := h.d.Store().GetTask(gone); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old task is still there after 10 s of 1 s sweeps")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if evs, _ := h.d.Store().Events(live, -1, 0); len(evs) != 3 {
		t.Fatalf("the running task has %d events, want 3", len(evs))
	}
	if evs, _ := h.d.Store().Events(gone, -1, 0); len(evs) != 0 {
		t.Fatalf("the removed task left %d events", len(evs))
	}
	// The sweep counts what it removed once the removal is done: the task
	// is gone from the store a moment before the metrics say so (asked at
	// once, under load, they did not yet).
	wants := []string{"\nagor_store_bytes ", `agor_retention_removed_total{kind="tasks"} 1`, `agor_retention_removed_total{kind="events"} 3`}
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := h.client.Get("http://agor/v1/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if containsAll(string(b), wants) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
