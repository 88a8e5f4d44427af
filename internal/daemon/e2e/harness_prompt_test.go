package e2e

// Prompts through the API: the agents the executors run, the keys the
// daemon hands them, and the NDJSON and SSE streams a client reads.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
)

// setKey stores the daemon-wide ANTHROPIC_API_KEY, as an admin would.
func (h *harness) setKey(t testing.TB, key string) {
	t.Helper()
	if code, out := h.do(t, "PUT", "/v1/credentials/ANTHROPIC_API_KEY", map[string]any{"value": key, "scope": "daemon"}); code != 200 {
		t.Fatalf("set key: %d %v", code, out)
	}
}

// prompt posts a prompt and reads the NDJSON stream to its end.
func (h *harness) prompt(t *testing.T, user string, body map[string]any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post("http://agor/v1/executors/"+user+"/prompt", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("prompt: %s", resp.Status)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// approveAll answers every open permission request with yes, as a person
// at agorctl would, until d has passed.
func (h *harness) approveAll(t *testing.T, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("GET", "http://agor/v1/permissions", nil)
		resp, err := h.client.Do(req)
		if err != nil {
			return
		}
		var out struct{ Permissions []struct{ ID string } }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		for _, p := range out.Permissions {
			b := bytes.NewReader([]byte(`{"approved":true,"reason":"test approves"}`))
			if r, err := h.client.Post("http://agor/v1/permissions/"+p.ID, "application/json", b); err == nil {
				r.Body.Close()
			}
		}
	}
}

// waitTask returns the id of the first task the store shows.
func (h *harness) waitTask(t *testing.T) string {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_, out := h.do(t, "GET", "/v1/sessions", nil)
		if ss, _ := out["sessions"].([]any); len(ss) > 0 {
			id := ss[0].(map[string]any)["id"].(string)
			_, tasks := h.do(t, "GET", "/v1/sessions/"+id+"/tasks", nil)
			if ts, _ := tasks["tasks"].([]any); len(ts) > 0 {
				return ts[0].(map[string]any)["id"].(string)
			}
		}
	}
	t.Fatal("no task appeared")
	return ""
}

// follow reads the task's SSE stream from after, counting each event in
// seen; it hangs up after max events (0: at the end) and returns the last
// sequence read.
func (h *harness) follow(t testing.TB, task string, after int64, max int, seen map[int64]int) int64 {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://agor/v1/tasks/"+task+"/events?follow=1", nil)
	req.Header.Set("Last-Event-ID", fmt.Sprint(after))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	got := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "event: end" {
			return after
		}
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			var seq int64
			fmt.Sscan(id, &seq)
			seen[seq]++
			after = seq
			if got++; max > 0 && got == max {
				return after
			}
		}
	}
	t.Fatalf("stream ended without its end event (after %d)", after)
	return after
}

// claudeSettings writes agents.yaml for the real CLI and the stand-in.
func claudeSettings(bin, url string) func(work string) string {
	return func(work string) string {
		home := filepath.Join(work, "home")
		_ = os.MkdirAll(home, 0o777)
		_ = os.Chmod(home, 0o777)
		return fmt.Sprintf("claude-code:\n  binary: %s\n  env:\n    ANTHROPIC_BASE_URL: %s\n    HOME: %s\n    CLAUDE_CODE_MAX_RETRIES: \"0\"\n", bin, url, home)
	}
}

// setCred stores a daemon-wide credential, as an admin would.
func (h *harness) setCred(t testing.TB, name, key string) {
	t.Helper()
	if code, out := h.do(t, "PUT", "/v1/credentials/"+name, map[string]any{"value": key, "scope": "daemon"}); code != 200 {
		t.Fatalf("set %s: %d %v", name, code, out)
	}
}

// agentsYAML is the agents.yaml entry of c.
func agentsYAML(c agenttest.Case) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n  binary: %s\n  env:\n", c.Tool, c.Binary)
	for k, v := range c.Env {
		fmt.Fprintf(&b, "    %s: %q\n", k, v)
	}
	return b.String()
}

// decisions are a prompt stream's permission_decided data and its result.
func decisions(lines []map[string]any) (decided []map[string]any, result map[string]any) {
	for _, l := range lines {
		if ev, ok := l["event"].(map[string]any); ok && ev["event_type"] == "permission_decided" {
			decided = append(decided, ev["event_data"].(map[string]any)["data"].(map[string]any))
		}
		if r, ok := l["result"].(map[string]any); ok {
			result = r
		}
	}
	return decided, result
}
