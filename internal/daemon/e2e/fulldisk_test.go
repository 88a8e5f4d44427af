package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon"
)

// TestFullDisk: the daemon's state directory on a 6 MiB tmpfs, and one
// prompt whose agent prints 40 messages of 200 KB. The daemon stays up and
// answers reads; the client is told the task is incomplete, with how many
// events were not stored, before its result, and exits non-zero; the
// next prompt is refused with storage_full (507) naming the state
// directory; the journal (here the daemon's log) has one warning for the
// episode, and the metrics and health show it. Once the filesystem grows
// the daemon writes what it kept in memory by itself, a new prompt runs,
// and no session or task is left running — nor after a restart on the
// same state, which also settles a task a stopped daemon left running.
// Below store.min_free_bytes new tasks are refused while reads go on.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs for the state directory")
	}
	state := smallFS(t, "6m")
	agent := floodAgent(t)
	h := startWith(t, func(string) string { return "claude-code:\n  binary: " + agent + "\n" },
		func(c *config.Config) { c.Daemon.StateDir, c.Store.MinFreeBytes = state, 0 })
	h.setCred(t, "ANTHROPIC_API_KEY", "sk-test-full-0disk")
	name, _ := target(t)
	prompt := func(text string) map[string]any {
		return map[string]any{"agentic_tool": "claude-code", "prompt": text, "cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000}
	}

	// The flood fills the filesystem.
	lines := h.prompt(t, name, prompt("flood"))
	last := lines[len(lines)-1]
	res, _ := last["result"].(map[string]any)
	dropped, _ := last["dropped_events"].(float64)
	warning, _ := last["warning"].(string)
	if res == nil || last["status"] != "incomplete" || dropped < 1 || !strings.Contains(warning, state) {
		t.Fatalf("the flood's result line: %v (the agent's result %v)", last, res)
	}
	t.Logf("the flood: agent said %v (%v messages); the daemon: %v, %v events dropped (%d streamed); warning %q",
		res["status"], res["message_count"], last["status"], dropped, len(lines)-2, warning)
	task, _ := lines[0]["task_id"].(string)
	h.wantTask(t, task, "incomplete", int64(dropped))

	// New work is refused, plainly; reads keep working.
	code, body := h.post(t, "/v1/executors/"+name+"/prompt", prompt("small"))
	if code != http.StatusInsufficientStorage || !strings.Contains(body, `"storage_full"`) || !strings.Contains(body, state) {
		t.Errorf("a prompt on the full store: %d %s, want 507 storage_full naming %s", code, body, state)
	}
	if code, out := h.do(t, "GET", "/v1/sessions", nil); code != 200 {
		t.Errorf("sessions on the full store: %d %v", code, out)
	}
	health := h.storage(t)
	metrics := h.storeMetrics(t)
	if health["state"] != "full" || metrics["agor_store_full"] != 1 || metrics["agor_store_full_episodes_total"] != 1 || metrics["agor_store_write_failures_total"] < dropped {
		t.Errorf("while full: health %v, metrics %v", health, metrics)
	}
	if n := strings.Count(h.logs.String(), "store cannot write"); n != 1 {
		t.Errorf("%d warnings that the store cannot write, want 1 for the episode", n)
	}
	t.Logf("while full: health %v; metrics %v", health, metrics)

	// The daemon stopped while still full: what it kept in memory is
	// written with the reserve's room, not lost to "interrupted".
	kept := health["pending"]
	h = h.restart(t, nil)
	h.wantTask(t, task, "incomplete", int64(dropped))
	if !strings.Contains(h.logs.String(), "reserve released") || strings.Contains(h.logs.String(), "task end lost") {
		t.Errorf("stopped while full with %v statuses kept: the reserve was not used, or an end was lost", kept)
	}
	warned := strings.Count(h.logs.String(), "store cannot write")

	// Space returns: the daemon writes what it kept, by itself.
	grow(t, state, "64m")
	h.waitStorageOK(t)
	again := h.prompt(t, name, prompt("small"))
	if _, r := decisions(again); r == nil || r["status"] != "completed" {
		t.Errorf("a prompt once space returned: %v", again[len(again)-1])
	}
	h.noneRunning(t)
	if n := strings.Count(h.logs.String(), "store cannot write") - warned; n > 1 {
		t.Errorf("%d more warnings that the store cannot write after the restart, want at most 1 (its own episode)", n)
	}
	if _, err := os.Stat(filepath.Join(state, "agor.db-reserve")); err != nil {
		t.Errorf("the reserve is not made again once space returned: %v", err)
	}

	// A task cut by the daemon stopping, then a restart on the same state.
	slow := h.promptAsync(t, name, prompt("slow"))
	waitFor(t, "the slow task to run", func() bool { return h.taskStatus(t, slow) == "running" })
	h = h.restart(t, nil)
	h.wantTask(t, task, "incomplete", int64(dropped))
	h.wantTask(t, slow, "interrupted", 0)
	h.noneRunning(t)
	again = h.prompt(t, name, prompt("small"))
	if _, r := decisions(again); r == nil || r["status"] != "completed" {
		t.Errorf("a prompt after the restart: %v", again[len(again)-1])
	}
	h.noneRunning(t)

	// Headroom: below store.min_free_bytes new tasks are refused, reads go on.
	free := h.storage(t)["free_bytes"].(float64)
	h = h.restart(t, func(o *daemon.Options) { o.Config.Store.MinFreeBytes = int64(free) + 8<<20 })
	code, body = h.post(t, "/v1/executors/"+name+"/prompt", prompt("small"))
	if code != http.StatusInsufficientStorage || !strings.Contains(body, "min_free_bytes") || !strings.Contains(body, state) {
		t.Errorf("a prompt below the floor: %d %s", code, body)
	}
	if code, out := h.do(t, "GET", "/v1/tasks/"+task, nil); code != 200 {
		t.Errorf("a task read below the floor: %d %v", code, out)
	}
	if m := h.storeMetrics(t); m["agor_store_full"] != 1 {
		t.Errorf("below the floor: metrics %v", m)
	}
}

// smallFS mounts a tmpfs of size for the state directory, unmounted when
// the test ends (after the daemon, which is stopped first).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-fulldisk")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		os.Remove(dir)
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

func grow(t *testing.T, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size); err != nil {
		t.Fatalf("grow %s: %v", dir, err)
	}
}

// floodAgent is a stand-in Claude Code: "flood" prints 40 messages of
// 200 KB, "slow" waits a minute, anything else answers at once.
func floodAgent(t *testing.T) string {
	dir, err := os.MkdirTemp("", "agor-flood-agent") // the executor's user must reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	for i := range 40 { // each its own, so that no raw line is kept once for all
		line := fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%02d%s"}]}}`+"\n", i, strings.Repeat("x", 200<<10))
		write(t, filepath.Join(dir, fmt.Sprintf("line%02d", i)), line, 0o644)
	}
	write(t, filepath.Join(dir, "claude"), fmt.Sprintf(`#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"full-1"}'
case "$turn" in
*flood*) cat %s/line* ;;
*slow*) sleep 60 ;;
esac
echo '{"type":"result","subtype":"success","session_id":"full-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r line; do :; done
`, dir), 0o755)
	return filepath.Join(dir, "claude")
}

// promptAsync starts a prompt and returns its task once the daemon has
// stored it (the stream's first line).
func (h *harness) promptAsync(t *testing.T, user string, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post("http://agor/v1/executors/"+user+"/prompt", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var first struct {
		TaskID string `json:"task_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&first); err != nil || first.TaskID == "" {
		t.Fatalf("prompt: %s %v", resp.Status, err)
	}
	return first.TaskID
}

func (h *harness) taskStatus(t *testing.T, task string) string {
	t.Helper()
	_, out := h.do(t, "GET", "/v1/tasks/"+task, nil)
	s, _ := out["status"].(string)
	return s
}

func (h *harness) wantTask(t *testing.T, task, status string, dropped int64) {
	t.Helper()
	code, out := h.do(t, "GET", "/v1/tasks/"+task, nil)
	got, _ := out["dropped_events"].(float64)
	if code != 200 || out["status"] != status || int64(got) != dropped {
		t.Errorf("task %s: %d %v %v dropped; want %s, %d dropped", task, code, out["status"], out["dropped_events"], status, dropped)
	}
}

// noneRunning: no session nor task is left running or queued.
func (h *harness) noneRunning(t *testing.T) {
	t.Helper()
	_, out := h.do(t, "GET", "/v1/sessions", nil)
	sessions, _ := out["sessions"].([]any)
	for _, x := range sessions {
		s := x.(map[string]any)
		if s["status"] == "running" || s["status"] == "queued" {
			t.Errorf("session %v left %v", s["id"], s["status"])
		}
		_, tl := h.do(t, "GET", fmt.Sprintf("/v1/sessions/%v/tasks", s["id"]), nil)
		tasks, _ := tl["tasks"].([]any)
		for _, y := range tasks {
			if tk := y.(map[string]any); tk["status"] == "running" || tk["status"] == "queued" {
				t.Errorf("task %v left %v", tk["id"], tk["status"])
			}
		}
	}
	if len(sessions) == 0 {
		t.Error("no sessions listed")
	}
}

func (h *harness) storage(t *testing.T) map[string]any {
	t.Helper()
	_, out := h.do(t, "GET", "/v1/health", nil)
	s, _ := out["storage"].(map[string]any)
	return s
}

func (h *harness) waitStorageOK(t *testing.T) {
	t.Helper()
	waitFor(t, "the store to write again", func() bool { s := h.storage(t); return s["state"] == "ok" && s["pending"] == 0.0 })
}

var metricLine = regexp.MustCompile(`(?m)^(agor_store_[a-z_]+)\{[^}]*\} (-?\d+)$`)

// storeMetrics reads the agor_store_* series.
func (h *harness) storeMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := h.client.Get("http://agor/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range metricLine.FindAllStringSubmatch(string(b), -1) {
		out[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	return out
}
