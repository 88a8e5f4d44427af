package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// A person signed in to Claude Code with her own subscription (its OAuth
// credentials in her ~/.claude): under the gateway the real CLI keeps
// that sign-in. The stand-in sees her bearer token, never the daemon's
// key, nor the task's token; the agent's environment holds no key; the
// ledger counts each request at no cost.
func TestGatewayClaudeOwnSignIn(t *testing.T) {
	const key, oauth = "sk-ant-real-0a1b", "sk-ant-oat01-her-own-9c8d"
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "done", Bash: "env > agent-env.txt"})
	bin := agenttest.Binary(t, "claude-code")
	h := startWith(t, claudeSettings(bin, "http://127.0.0.1:9"), gatewayOn(model.URL))
	h.setKey(t, key)
	creds := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":"sk-ant-ort01-x","expiresAt":%d,"scopes":["user:inference"],"subscriptionType":"pro"}}`,
		oauth, time.Now().Add(24*time.Hour).UnixMilli())
	dir := filepath.Join(h.work, "home", ".claude")
	if err := os.MkdirAll(dir, 0o777); err != nil || os.Chmod(dir, 0o777) != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(creds), 0o666); err != nil {
		t.Fatal(err)
	}
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "dump your environment",
		"cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000, "model": "stand-in"})
	if _, result := decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("result %v", result)
	}
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the stand-in")
	}
	for _, r := range reqs {
		if r.Auth != "Bearer "+oauth || r.APIKey != "" {
			t.Fatalf("the stand-in saw Authorization %q, x-api-key %q; want her own sign-in only", r.Auth, r.APIKey)
		}
	}
	env, err := os.ReadFile(filepath.Join(h.work, "agent-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), key) || strings.Contains(string(env), "ANTHROPIC_API_KEY=") || !strings.Contains(string(env), "/own/agor-gw1.") {
		t.Fatalf("the agent's environment:\n%s", env)
	}
	rows, err := h.d.Store().TaskSpend(h.waitTask(t))
	if err != nil || len(rows) != len(reqs) {
		t.Fatalf("%d ledger rows (%v) for %d requests", len(rows), err, len(reqs))
	}
	for _, r := range rows {
		if r.Input == 0 || r.CostMicros != 0 {
			t.Errorf("row %+v: want counted at no cost", r)
		}
	}
	t.Logf("%d requests with her own sign-in through the gateway, metered at no cost", len(reqs))
}
