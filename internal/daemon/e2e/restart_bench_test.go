package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/store"
)

// BenchmarkBlindAcrossRestart is how long a client following a task sees
// nothing while the daemon restarts (make bench): from the old daemon's
// stop to the new one's first answer about the task, median of b.N. In
// process, with the socket made anew (under systemd the socket unit holds
// it and queues the client meanwhile; the real-systemd suite prints the
// same for systemctl restart and kill -9).
func BenchmarkBlindAcrossRestart(b *testing.B) {
	h := start(b)
	name, uid := target(b)
	sess, err := h.d.Store().CreateSession(store.Session{ID: newTestID(), UnixUser: name, UID: int64(uid), AgenticTool: "claude-code", Cwd: "."})
	if err != nil {
		b.Fatal(err)
	}
	task := newTestID()
	if _, err := h.d.Store().CreateTask(store.Task{ID: task, SessionID: sess.ID, UnixUser: name, UID: int64(uid), Prompt: "p", Status: store.Completed}); err != nil {
		b.Fatal(err)
	}
	var blind []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		h = h.restart(b, nil)
		for !answers(h, "/v1/tasks/"+task) {
			if time.Since(t0) > 30*time.Second {
				b.Fatal("no answer 30 s after the restart")
			}
			time.Sleep(time.Millisecond)
		}
		blind = append(blind, time.Since(t0))
	}
	slices.Sort(blind)
	med := blind[len(blind)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, "blind-ms")
	fmt.Printf("blind across a daemon restart: median %s of %d (min %s, max %s)\n", med.Round(time.Millisecond), len(blind),
		blind[0].Round(time.Millisecond), blind[len(blind)-1].Round(time.Millisecond))
}

// answers says whether the daemon answers GET path with 200.
func answers(h *harness, path string) bool {
	resp, err := h.client.Get("http://agor" + path)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}
