package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent"
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
	if strings.Contains(string(env), key) || strings.Contains(string(env), "ANTHROPIC_API_KEY=") || !strings.Contains(string(env), "/own/agor-gateway") {
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

// Codex signed in with its person's own ChatGPT account (auth.json holds
// that sign-in's tokens): under the gateway the real CLI keeps it. Its
// requests reach the chatgpt upstream with her bearer token, never the
// daemon's key; the agent's environment holds no key; the ledger counts
// them at no cost. Without her sign-in the turn would go to the openai
// upstream with the daemon's key (TestGatewayEachAgent).
func TestGatewayCodexOwnSignIn(t *testing.T) {
	const key, access = "sk-real-codex-0c2d", "chatgpt-access-her-own-51"
	chatgpt := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "done", Command: envDump,
		Usage: modeltest.OpenAIUsage{InputTokens: 900, CachedInputTokens: 100, OutputTokens: 12}})
	home, err := os.MkdirTemp("", "agor-own-codex")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777)
	dir := filepath.Join(home, ".codex")
	staleCodexConfig(t, dir, "http://127.0.0.1:9/v1")
	write(t, filepath.Join(dir, "auth.json"), chatGPTAuth(access), 0o666)
	c := agenttest.Case{Tool: "codex", Binary: agenttest.Binary(t, "codex"),
		Env: map[string]string{agent.CodexBaseURLEnv: "http://127.0.0.1:9/v1", "HOME": home, "CODEX_HOME": dir}}
	h := startWith(t, func(string) string { return agentsYAML(c) }, func(cfg *config.Config) {
		cfg.Gateway.Enabled = true
		cfg.Gateway.Upstreams["chatgpt"] = chatgpt.URL // it serves /v1/responses
		cfg.Gateway.Upstreams["openai"] = "http://127.0.0.1:9"
	})
	h.setCred(t, "OPENAI_API_KEY", key)
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "codex", "prompt": "dump your environment", "cwd": ".",
		"permission_mode": "bypassPermissions", "timeout_ms": 120000})
	if _, result := decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("result %v; stream %v", result, lines)
	}
	reqs := chatgpt.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the chatgpt stand-in")
	}
	for _, r := range reqs {
		if r.Authorization != "Bearer "+access {
			t.Fatalf("the stand-in saw Authorization %q; want her own sign-in", r.Authorization)
		}
	}
	env, err := os.ReadFile(filepath.Join(h.work, "agent-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), key) || strings.Contains(string(env), "OPENAI_API_KEY=") || !strings.Contains(string(env), "/own/agor-gateway") {
		t.Fatalf("the agent's environment:\n%s", env)
	}
	rows := ledgerRows(t, h, h.waitTask(t), len(reqs))
	if len(rows) != len(reqs) {
		t.Fatalf("%d ledger rows for %d requests", len(rows), len(reqs))
	}
	for _, r := range rows {
		if r.Input != 800 || r.CacheRead != 100 || r.CostMicros != 0 {
			t.Errorf("row %+v: want the stand-in's tokens at no cost", r)
		}
	}
}

// chatGPTAuth is a Codex auth.json of a ChatGPT sign-in with access as
// its access token (the id token is unsigned: Codex reads its claims).
func chatGPTAuth(access string) string {
	b64 := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"email": "her@example.org", "exp": time.Now().Add(24 * time.Hour).Unix(),
		"https://api.openai.com/auth": map[string]string{"chatgpt_plan_type": "plus", "chatgpt_account_id": "acct-her-1"}}
	jwt := b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(claims) + ".sig"
	auth := map[string]any{"OPENAI_API_KEY": nil, "last_refresh": time.Now().UTC().Format(time.RFC3339Nano),
		"tokens": map[string]string{"id_token": jwt, "access_token": access, "refresh_token": "rt-her", "account_id": "acct-her-1"}}
	b, _ := json.Marshal(auth)
	return string(b)
}
