package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// TestOrphanedPromptStopped: a prompt whose client goes away is stopped
// once the grace period passes with nobody following it; one that someone
// follows runs on.
func TestOrphanedPromptStopped(t *testing.T) {
	model := modeltest.NewAnthropic(t,
		modeltest.AnthTurn{Text: "never", Bash: "sleep 60"},
		modeltest.AnthTurn{Text: "never", Bash: "sleep 60"})
	h := startWith(t, claudeSettings(agenttest.Binary(t, "claude-code"), model.URL), nil)
	h.setKey(t, "sk-ant-x-12345678")
	name, _ := target(t)
	// leave starts a prompt, waits until its agent runs the tool, and
	// hangs up; it returns the task.
	leave := func(turns int) string {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		b, _ := json.Marshal(map[string]any{"agentic_tool": "claude-code", "prompt": "wait", "cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000})
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://agor/v1/executors/"+name+"/prompt", bytes.NewReader(b))
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var first struct {
			TaskID string `json:"task_id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&first); err != nil || first.TaskID == "" {
			t.Fatalf("first line: %v %+v", err, first)
		}
		for end := time.Now().Add(20 * time.Second); len(model.Conversation()) < turns && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		}
		time.Sleep(300 * time.Millisecond) // the Bash tool's sleep is running
		cancel()
		resp.Body.Close()
		return first.TaskID
	}
	status := func(task string) any {
		_, out := h.do(t, "GET", "/v1/tasks/"+task, nil)
		return out["status"]
	}

	task := leave(1)
	left := time.Now()
	for status(task) != "cancelled" && time.Since(left) < 20*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if got := status(task); got != "cancelled" {
		t.Fatalf("20 s after its client went away the task is %v, want cancelled", got)
	}
	t.Logf("stopped %.1f s after its client went away (grace %s)", time.Since(left).Seconds(), orphanGrace)

	// Followed by someone else, it runs on past several grace periods.
	task = leave(2)
	followed := make(chan int64, 1)
	go func() { followed <- h.follow(t, task, -1, 0, map[int64]int{}) }()
	time.Sleep(4 * orphanGrace)
	if got := status(task); got != "running" {
		t.Fatalf("a followed task %v after %s without its client, want running", got, 4*orphanGrace)
	}
	if code, out := h.do(t, "POST", "/v1/tasks/"+task+"/stop", nil); code != 200 {
		t.Fatalf("stop: %d %v", code, out)
	}
	<-followed
}
