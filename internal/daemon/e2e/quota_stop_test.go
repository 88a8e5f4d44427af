package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// TestEventQuotaStopsTask: an agent whose events outgrow
// quotas.max_event_bytes_per_task gets an error event naming the quota,
// nothing more of it is stored, and the task is stopped (stop_task) while
// the agent still writes; the next prompt of the same person is served.
func TestEventQuotaStopsTask(t *testing.T) {
	const bound = 256 << 10
	dir, err := os.MkdirTemp("", "agor-quota") // the executor's user must reach the stand-in
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	line := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("x", 32<<10) + `"}]}}` + "\n"
	write(t, filepath.Join(dir, "line"), line, 0o644)
	// A stand-in Claude Code writing 64 lines of 32 KB, slowly enough that
	// the stop reaches it mid-turn, then a result; its second turn (the
	// next prompt) answers at once.
	write(t, filepath.Join(dir, "claude"), fmt.Sprintf(`#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"quota-1"}'
case "$turn" in *small*) n=1 ;; *) n=64 ;; esac
i=0; while [ $i -lt $n ]; do cat %s/line; sleep 0.02; i=$((i+1)); done
echo '{"type":"result","subtype":"success","session_id":"quota-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r line; do :; done
`, dir), 0o755)
	h := startWith(t, func(string) string { return "claude-code:\n  binary: " + filepath.Join(dir, "claude") + "\n" },
		func(c *config.Config) { c.Quotas.MaxEventBytesPerTask, c.Quotas.EventQuotaAction = bound, "stop" })
	h.setCred(t, "ANTHROPIC_API_KEY", "sk-test-quota-0stop")
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "flood", "cwd": ".",
		"permission_mode": "bypassPermissions", "timeout_ms": 60000})
	_, result := decisions(lines)
	stream := fmt.Sprint(lines)
	if !strings.Contains(stream, "event_quota_exceeded") || !strings.Contains(stream, "max_event_bytes_per_task") {
		t.Fatalf("no error event naming the quota in the stream; result %v", result)
	}
	if result == nil || result["status"] == "completed" {
		t.Errorf("the task was not stopped: result %v", result)
	}
	task, _ := lines[0]["task_id"].(string)
	code, out := h.do(t, "GET", "/v1/tasks/"+task, nil)
	if code != 200 {
		t.Fatalf("task: %d %v", code, out)
	}
	// What was kept: the agent's text (its raw lines, all alike, are kept
	// once per task), at most one line past the bound.
	stored := h.textBytes(t, task)
	if stored > bound+32<<10 {
		t.Errorf("%d bytes of the agent's text stored past a bound of %d", stored, bound)
	}
	t.Logf("stored %d bytes of the agent's text (bound %d) of 2 MiB written; result %v", stored, bound, result["status"])
	again := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "small", "cwd": ".",
		"permission_mode": "bypassPermissions", "timeout_ms": 60000})
	if _, r := decisions(again); r == nil || r["status"] != "completed" {
		t.Errorf("the next prompt: %v", r)
	}
}

// textBytes replays a task's stored events and counts the text of its
// text events (the rest is the raw line, kept once, repeated in replies).
func (h *harness) textBytes(t *testing.T, task string) int {
	t.Helper()
	resp, err := h.client.Get("http://agor/v1/tasks/" + task + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Data struct {
				Data struct{ Text string } `json:"data"`
			} `json:"event_data"`
		}
		if json.Unmarshal([]byte(d), &ev) == nil {
			n += len(ev.Data.Data.Text)
		}
	}
	return n
}
