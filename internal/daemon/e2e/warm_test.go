package e2e

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
)

// Two sessions' warm agents on a host capped at one (agents.warm_per_host:
// 1): the executor reports each one it keeps, and the daemon asks the
// least recently used back. The released session's next prompt starts
// its agent cold; the kept one's runs warm, and then it is the older.
func TestDaemonWarmPerHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gemini CLI")
	}
	home, err := os.MkdirTemp("", "agor-warm-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor's user writes the agent's state
	var c agenttest.Case
	for _, x := range agenttest.Cases(t, home, 0) {
		if x.Tool == "gemini" { // answers a plain prompt without a tool
			c = x
		}
	}
	h := startWith(t, func(string) string { return agentsYAML(c) }, func(cfg *config.Config) { cfg.Agents.WarmPerHost = 1 })
	h.setCred(t, c.Cred, "sk-test-codex-5e2d")
	name, _ := target(t)

	s1, _ := h.warmPrompt(t, name, "", c)
	h.waitWarm(t, name, s1)
	s2, _ := h.warmPrompt(t, name, "", c)
	h.waitWarm(t, name, s2) // s1, the older, released
	if _, warm := h.warmPrompt(t, name, s2, c); !warm {
		t.Fatal("the session kept warm ran cold")
	}
	if _, warm := h.warmPrompt(t, name, s1, c); warm {
		t.Fatal("the released session ran warm")
	}
	h.waitWarm(t, name, s1) // now s2 is the older
}

// warmPrompt runs a plain prompt of c's agent in session (""; a new one)
// and returns the session and whether it ran warm.
func (h *harness) warmPrompt(t *testing.T, user, session string, c agenttest.Case) (string, bool) {
	t.Helper()
	body := map[string]any{"agentic_tool": c.Tool, "prompt": c.Plain, "cwd": ".", "permission_mode": "default", "timeout_ms": 120000}
	if session != "" {
		body["session_id"] = session
	}
	var result map[string]any
	for _, l := range h.prompt(t, user, body) {
		if s, ok := l["session_id"].(string); ok && s != "" {
			session = s
		}
		if r, ok := l["result"].(map[string]any); ok {
			result = r
		}
	}
	if result == nil || result["status"] != "completed" || session == "" {
		t.Fatalf("prompt in session %q: result %v", session, result)
	}
	return session, result["warm"] == true
}

// waitWarm waits until user's executor reports exactly sessions warm.
func (h *harness) waitWarm(t *testing.T, user string, sessions ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = got[:0]
		for _, a := range h.d.Warm().Of(user) {
			got = append(got, a.SessionID)
		}
		if slices.Equal(got, sessions) {
			return
		}
	}
	t.Fatalf("warm agents reported: %v, want %v", got, sessions)
}
