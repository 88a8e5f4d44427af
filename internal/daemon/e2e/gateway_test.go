package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// gatewayOn turns the model gateway on with url as Anthropic's upstream.
func gatewayOn(url string) func(*config.Config) {
	return func(c *config.Config) {
		c.Gateway.Enabled = true
		c.Gateway.Upstreams["anthropic"] = url
		c.Gateway.Prices["stand-in"] = config.Price{Input: 1, Output: 10, CacheRead: 0.5, CacheWrite: 2}
	}
}

// The real Claude Code through the gateway: agents.yaml points it at a
// URL nothing serves, the executor points it at its relay instead, with
// the placeholder for a key. The stand-in sees the daemon's real key;
// the agent's own environment (which its tool dumps) holds the
// placeholder and never the key; the ledger equals the stand-in's own
// count of tokens, request for request.
func TestGatewayClaude(t *testing.T) {
	const key = "sk-ant-real-7d2e9a"
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "done", Bash: "env > agent-env.txt"})
	bin := agenttest.Binary(t, "claude-code")
	h := startWith(t, claudeSettings(bin, "http://127.0.0.1:9"), gatewayOn(model.URL))
	h.setKey(t, key)
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "dump your environment",
		"cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000, "model": "stand-in"})
	_, result := decisions(lines)
	if result == nil || result["status"] != "completed" {
		t.Fatalf("result %v", result)
	}
	reqs := model.Requests()
	for _, r := range reqs {
		if r.APIKey != key {
			t.Fatalf("the stand-in saw key %q, want the daemon's", r.APIKey)
		}
	}
	env, err := os.ReadFile(filepath.Join(h.work, "agent-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), key) {
		t.Fatal("the agent's environment holds the real key")
	}
	if !strings.Contains(string(env), "ANTHROPIC_API_KEY=agor-gateway\n") || !strings.Contains(string(env), "ANTHROPIC_BASE_URL=http://127.0.0.1:") {
		t.Fatalf("the agent was not pointed at the gateway:\n%s", env)
	}
	task := h.waitTask(t)
	rows, err := h.d.Store().TaskSpend(task)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(reqs) {
		t.Fatalf("%d ledger rows for %d requests the stand-in answered", len(rows), len(reqs))
	}
	var want, got [4]int64
	for i, r := range reqs {
		u := r.Usage
		want[0], want[1], want[2], want[3] = want[0]+u.InputTokens, want[1]+u.OutputTokens, want[2]+u.CacheReadTokens, want[3]+u.CacheWriteTokens
		g := rows[i]
		got[0], got[1], got[2], got[3] = got[0]+g.Input, got[1]+g.Output, got[2]+g.CacheRead, got[3]+g.CacheWrite
		if g.User != name || g.Agent != "claude-code" || g.Status != 200 {
			t.Errorf("row %d: %+v", i, g)
		}
	}
	if want != got || want[0] == 0 {
		t.Fatalf("ledger tokens %v, the stand-in's own %v", got, want)
	}
	t.Logf("%d requests through the gateway; tokens in/out/cache read/write %v in the ledger and at the stand-in", len(reqs), got)
}

// A person past her budget: the request that finds it spent is refused
// in the provider's shape with the budget's words, which the real Claude
// Code prints; her next prompt is refused before any agent starts; an
// admin raising the budget in the configuration (no restart) lets her go
// on.
func TestGatewayBudget(t *testing.T) {
	const key = "sk-ant-real-b7"
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "done", Bash: "true"}, modeltest.AnthTurn{Text: "again"})
	bin := agenttest.Binary(t, "claude-code")
	name, _ := target(t)
	budget := func(c *config.Config, usd float64) {
		c.Gateway.Prices["stand-in"] = config.Price{Input: 10_000} // 120 tokens: 1.20 a request
		// A request holds its worst case before it is sent: at the
		// default reserve, the real Claude Code's body (tens of kB, 2
		// bytes a token) at this price is hundreds of dollars, so even
		// the first request would be refused and no raise to 10 would
		// fit. Reserve one input token (0.01) and price no output, so
		// what refuses her is what she spent: the first request's 1.20
		// passes 1, the next one is refused within the turn.
		c.Gateway.Reserve = config.Reserve{MaxOutput: 1, BytesPerToken: 1 << 20, MaxInput: 1}
		c.Gateway.Budgets.Users = map[string]config.BudgetSet{name: {DayCost: usd}}
	}
	h := startWith(t, claudeSettings(bin, "http://127.0.0.1:9"), func(c *config.Config) { gatewayOn(model.URL)(c); budget(c, 1) })
	h.setKey(t, key)
	body := map[string]any{"agentic_tool": "claude-code", "prompt": "spend", "cwd": ".", "permission_mode": "bypassPermissions",
		"timeout_ms": 120000, "model": "stand-in"}
	lines := h.prompt(t, name, body)
	_, result := decisions(lines)
	all, _ := json.Marshal(lines)
	want := regexp.MustCompile(`agor: daily budget of 1\.00 USD reached, resets \d{4}-\d{2}-\d{2}`).FindString(string(all))
	if result == nil || result["status"] == "completed" || want == "" {
		t.Fatalf("the turn past the budget: %s", all)
	}
	if n := len(model.Conversation()); n != 1 {
		t.Fatalf("the stand-in answered %d requests of the turn; the second should have been refused", n)
	}
	code, out := h.post(t, "/v1/executors/"+name+"/prompt", body)
	if code != 403 || !strings.Contains(out, "budget_reached") || !strings.Contains(out, want) {
		t.Fatalf("the next prompt: %d %s", code, out)
	}
	raise(t, h, func(c *config.Config) { gatewayOn(model.URL)(c); budget(c, 10) })
	lines = h.prompt(t, name, body)
	if _, result = decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("after the budget was raised: %v", lines)
	}
	t.Logf("refused with %q mid-turn and before the next prompt; completed after the raise", want)
}

// raise rewrites the configuration file the daemon reads, as an admin's
// edit would (the daemon notices the change at its next use).
func raise(t *testing.T, h *harness, tune func(*config.Config)) {
	t.Helper()
	cfg := h.opts.Config
	tune(&cfg)
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a new modification time
	if err := os.WriteFile(h.opts.ConfigPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
