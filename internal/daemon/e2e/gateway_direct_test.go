package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// An agent the operator points at a provider the gateway does not speak
// (gateway.direct_agents): with the gateway on, the real Claude Code
// goes to agents.yaml's URL itself with the key handed to it just in
// time, as with the gateway off; the gateway's ledger has nothing of it.
func TestGatewayDirectAgent(t *testing.T) {
	const key = "sk-ant-direct-44e1"
	model := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "done", Bash: "env > agent-env.txt"})
	bin := agenttest.Binary(t, "claude-code")
	h := startWith(t, claudeSettings(bin, model.URL), func(c *config.Config) {
		gatewayOn("http://127.0.0.1:9")(c)
		c.Gateway.DirectAgents = []string{"claude-code"}
	})
	h.setKey(t, key)
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": "claude-code", "prompt": "dump your environment",
		"cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 120000, "model": "stand-in"})
	if _, result := decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("result %v", result)
	}
	for _, r := range model.Requests() {
		if r.APIKey != key {
			t.Fatalf("the stand-in saw key %q, want the one handed out", r.APIKey)
		}
	}
	env, err := os.ReadFile(filepath.Join(h.work, "agent-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "ANTHROPIC_API_KEY="+key) || !strings.Contains(string(env), "ANTHROPIC_BASE_URL="+model.URL) {
		t.Fatalf("the agent was not given its key and agents.yaml's URL:\n%s", env)
	}
	if rows, err := h.d.Store().TaskSpend(h.waitTask(t)); err != nil || len(rows) != 0 {
		t.Fatalf("ledger rows %+v (%v), want none", rows, err)
	}
}
