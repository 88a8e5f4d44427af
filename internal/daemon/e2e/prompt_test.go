package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// The whole prompt path: the daemon issues the task's token and runs
// execute_prompt in the user's executor, which fetches the key from the
// daemon just in time and runs the real Claude Code CLI against a stand-in
// model server; the agent's permission question reaches the daemon's queue,
// a client approves it through the API, the tool runs in cwd as the user,
// and the events and usage stream back to the client.
func TestDaemonPromptWithClaude(t *testing.T) {
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "made it", Bash: "touch made-by-agent"})
	bin := agenttest.Binary(t, "claude-code")
	h := startWith(t, claudeSettings(bin, model.URL), nil)
	const key = "sk-ant-test-4f1c2b"
	h.setKey(t, key)
	name, uid := target(t)
	go h.approveAll(t, 60*time.Second)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "make the file", "cwd": ".", "permission_mode": "default", "timeout_ms": 120000})

	var types []string
	var result map[string]any
	for _, l := range lines {
		if ev, ok := l["event"].(map[string]any); ok {
			types = append(types, ev["event_type"].(string))
		}
		if r, ok := l["result"].(map[string]any); ok {
			result = r
		}
	}
	if result == nil || result["status"] != "completed" {
		t.Fatalf("result %v; events %v", result, types)
	}
	for _, want := range []string{"tool_call", "permission_asked", "permission_decided", "tool_result", "text_delta"} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	fi, err := os.Stat(filepath.Join(h.work, "made-by-agent"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Fatalf("the tool did not run as uid %d in cwd: %v", uid, err)
	}
	if got := model.Conversation()[0].APIKey; got != key {
		t.Errorf("the model saw key %q", got)
	}
	usage := result["token_usage"].(map[string]any)
	if usage["input_tokens"].(float64) <= 0 || usage["output_tokens"].(float64) <= 0 {
		t.Errorf("usage %v", usage)
	}
	// The key reached the agent only: not the audit trail, not the events.
	h.stop()
	for _, f := range []string{"audit.jsonl"} {
		if b, _ := os.ReadFile(filepath.Join(h.state, f)); bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", f)
		}
	}
	all, _ := json.Marshal(lines)
	if bytes.Contains(all, []byte(key)) {
		t.Error("an event holds the key")
	}
}

// Nobody answers the agent's permission question: after the daemon's
// permission timeout it is denied, the tool does not run, the agent is
// told, and the turn still completes.
func TestDaemonPromptPermissionTimeout(t *testing.T) {
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "could not", Bash: "touch made-by-agent"})
	h := startWith(t, claudeSettings(agenttest.Binary(t, "claude-code"), model.URL), func(c *config.Config) { c.Daemon.PermissionTimeoutMS = 700 })
	h.setKey(t, "sk-ant-x-12345678")
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "make the file", "cwd": ".", "permission_mode": "default", "timeout_ms": 120000})
	var decided map[string]any
	var result map[string]any
	for _, l := range lines {
		if ev, ok := l["event"].(map[string]any); ok && ev["event_type"] == "permission_decided" {
			decided = ev["event_data"].(map[string]any)["data"].(map[string]any)
		}
		if r, ok := l["result"].(map[string]any); ok {
			result = r
		}
	}
	if decided == nil || decided["approved"] != false || !strings.Contains(fmt.Sprint(decided["reason"]), "timeout") {
		t.Fatalf("permission decision %v", decided)
	}
	if result == nil || result["status"] != "completed" {
		t.Fatalf("result %v", result)
	}
	if _, err := os.Stat(filepath.Join(h.work, "made-by-agent")); err == nil {
		t.Fatal("the tool ran without permission")
	}
	if conv := model.Conversation(); len(conv) < 2 || !conv[1].AnthHasToolResult() {
		t.Fatalf("the model was not told the tool was refused: %d requests", len(conv))
	}
}

// A client following a task's events drops its connection mid-task and
// comes back with Last-Event-ID: it gets every event exactly once, the
// store keeps the session and task, and the task ends completed.
func TestDaemonEventsResume(t *testing.T) {
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "slept", Bash: "sleep 2; echo awake"})
	h := startWith(t, claudeSettings(agenttest.Binary(t, "claude-code"), model.URL), nil)
	h.setKey(t, "sk-ant-x-12345678")
	name, _ := target(t)
	done := make(chan []map[string]any, 1)
	go func() {
		done <- h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "sleep", "cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000})
	}()
	task := h.waitTask(t)
	seen := map[int64]int{}
	last := h.follow(t, task, -1, 3, seen) // leave after three events
	h.follow(t, task, last, 0, seen)       // resume until the end
	lines := <-done
	var n int
	for _, l := range lines {
		if l["event"] != nil {
			n++
		}
	}
	if len(seen) != n {
		t.Fatalf("resumed stream saw %d distinct events, the task had %d", len(seen), n)
	}
	for seq := int64(0); seq < int64(n); seq++ {
		if seen[seq] != 1 {
			t.Errorf("event %d seen %d times", seq, seen[seq])
		}
	}
	_, out := h.do(t, "GET", "/v1/tasks/"+task, nil)
	if out["status"] != "completed" {
		t.Errorf("task %v", out)
	}
}

// A task stopped through the API ends cancelled, its agent gone, even
// though the client that started it is still waiting.
func TestDaemonStopTask(t *testing.T) {
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "never", Bash: "sleep 60"})
	h := startWith(t, claudeSettings(agenttest.Binary(t, "claude-code"), model.URL), nil)
	h.setKey(t, "sk-ant-x-12345678")
	name, _ := target(t)
	done := make(chan []map[string]any, 1)
	go func() {
		done <- h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "wait", "cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000})
	}()
	task := h.waitTask(t)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if len(model.Conversation()) > 0 || time.Now().After(end) {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // the Bash tool's sleep is running
	if code, out := h.do(t, "POST", "/v1/tasks/"+task+"/stop", nil); code != 200 || out["stopped"] != true {
		t.Fatalf("stop: %d %v", code, out)
	}
	select {
	case lines := <-done:
		last := lines[len(lines)-1]["result"].(map[string]any)
		if last["status"] != "cancelled" {
			t.Fatalf("result %v", last)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stopped task did not end")
	}
	if _, out := h.do(t, "GET", "/v1/tasks/"+task, nil); out["status"] != "cancelled" {
		t.Fatalf("task %v", out)
	}
}

// A session made through the API takes a prompt that answers at once; the
// task then runs on its own and the client follows it by its events.
func TestDaemonPromptAsync(t *testing.T) {
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "async done"})
	h := startWith(t, claudeSettings(agenttest.Binary(t, "claude-code"), model.URL), nil)
	h.setKey(t, "sk-ant-x-12345678")
	name, _ := target(t)
	code, sess := h.do(t, "POST", "/v1/sessions", map[string]any{"unix_user": name, "agentic_tool": "claude-code", "cwd": "."})
	if code != 201 || sess["status"] != "idle" {
		t.Fatalf("create session: %d %v", code, sess)
	}
	code, out := h.do(t, "POST", "/v1/sessions/"+sess["id"].(string)+"/prompt", map[string]any{"prompt": "hi", "timeout_ms": 60000})
	task, _ := out["task_id"].(string)
	if code != 202 || task == "" {
		t.Fatalf("prompt: %d %v", code, out)
	}
	seen := map[int64]int{}
	h.follow(t, task, -1, 0, seen)
	if len(seen) == 0 {
		t.Fatal("no events")
	}
	_, tv := h.do(t, "GET", "/v1/tasks/"+task, nil)
	if tv["status"] != "completed" {
		t.Fatalf("task %v", tv)
	}
	_, sv := h.do(t, "GET", "/v1/sessions", nil)
	if s := sv["sessions"].([]any)[0].(map[string]any); s["status"] != "completed" {
		t.Fatalf("session %v", s)
	}
}
