package e2e

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// BenchmarkLoad is the daemon's load check (make bench): how many sessions
// a second the API accepts, how fast one task's events fan out live to 10
// concurrent stream clients, and the resident memory of the process (the
// daemon and this test) afterwards.
func BenchmarkLoad(b *testing.B) {
	h := start(b)
	name, _ := target(b)
	sessions, prompts, events := 500, 200, 5000
	if testing.Short() { // make bench-smoke: that it runs, not its figures
		sessions, prompts, events = 20, 10, 200
	}
	b.ResetTimer()
	for range b.N {
		b.ReportMetric(sessionsPerSecond(b, h, name, sessions), "sessions/s")
		b.ReportMetric(promptsPerSecond(b, h, name, prompts), "prompts-accepted/s")
		b.ReportMetric(fanOut(b, h, name, events, 10), "events/s-delivered")
	}
	b.ReportMetric(float64(rssKiB())/1024, "RSS-MiB")
}

func sessionsPerSecond(b *testing.B, h *harness, user string, n int) float64 {
	t0 := time.Now()
	for range n {
		if code, out := h.do(b, "POST", "/v1/sessions", map[string]any{"unix_user": user, "agentic_tool": "claude-code", "cwd": "."}); code != 201 {
			b.Fatalf("create session: %d %v", code, out)
		}
	}
	return float64(n) / time.Since(t0).Seconds()
}

// promptsPerSecond posts n prompts to one session through the API, which
// answers each at once (202) and runs the task in the background; the
// tasks end quickly here (the daemon holds no API key for the agent).
func promptsPerSecond(b *testing.B, h *harness, user string, n int) float64 {
	_, sess := h.do(b, "POST", "/v1/sessions", map[string]any{"unix_user": user, "agentic_tool": "claude-code", "cwd": "."})
	path := "/v1/sessions/" + sess["id"].(string) + "/prompt"
	t0 := time.Now()
	for range n {
		if code, out := h.do(b, "POST", path, map[string]any{"prompt": "hi"}); code != 202 {
			b.Fatalf("prompt: %d %v", code, out)
		}
	}
	rate := float64(n) / time.Since(t0).Seconds()
	h.d.Server().Wait()
	return rate
}

// fanOut puts n events into one task through the daemon's sink while
// clients follow it; it returns events delivered a second, all clients
// together, once every client has seen every event.
func fanOut(b *testing.B, h *harness, user string, n, clients int) float64 {
	sess, err := h.d.Store().CreateSession(store.Session{ID: newTestID(), UnixUser: user, AgenticTool: "claude-code", Cwd: ".", Status: "running"})
	if err != nil {
		b.Fatal(err)
	}
	task := newTestID()
	if _, err := h.d.Store().CreateTask(store.Task{ID: task, SessionID: sess.ID, UnixUser: user, Prompt: "load", Status: store.Running}); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	counts := make([]map[int64]int, clients)
	for i := range clients {
		counts[i] = map[int64]int{}
		wg.Add(1)
		go func() { defer wg.Done(); h.follow(b, task, -1, n, counts[i]) }() // hangs up at the last event
	}
	time.Sleep(100 * time.Millisecond) // let them connect
	t0 := time.Now()
	data := []byte(`{"type":"text_delta","data":{"text":"` + strings.Repeat("x", 180) + `"}}`)
	for seq := range int64(n) {
		ev := apiwire.StoredEvent{TaskID: task, Sequence: seq, Timestamp: time.Now().UnixMilli(), Type: "text_delta", Data: data}
		if _, err := h.d.Server().Events.Put(ev); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	d := time.Since(t0)
	if err := h.d.Store().SetTaskStatus(task, store.Completed, nil, ""); err != nil {
		b.Fatal(err)
	}
	for i, c := range counts {
		if len(c) != n {
			b.Fatalf("client %d saw %d of %d events", i, len(c), n)
		}
	}
	return float64(n*clients) / d.Seconds()
}

func rssKiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
