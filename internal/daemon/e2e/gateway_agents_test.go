package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// envDump is the tool turn of TestGatewayEachAgent: the environment the
// agent's shell tool was given, into the cwd.
const envDump = "env > agent-env.txt"

// seen is one request a stand-in answered, in the ledger's terms: the
// key it carried; the usage it reported (uncached input, output, cache
// read, cache write: the provider's input counts include the cached part,
// taken off here as the ledger does); whether the answer was a stream.
type seen struct {
	key      string
	usage    [4]int64
	streamed bool
}

// gatewayAgent is one CLI whose model calls go through the gateway to a
// stand-in.
type gatewayAgent struct {
	tool, cred  string
	family      string // gateway.upstreams key
	upstream    string // the stand-in's root: the CLI's paths are served under it
	env         map[string]string
	prompt      string
	keyVar, url string // the agent's key and base URL variables
	seen        func() []seen
	// before prepares the agent's home, when set.
	before func(t *testing.T)
}

// gatewayAgents are codex, gemini and opencode with their stand-ins; each
// CLI's base URL in agents.yaml is a port nothing serves, so a request
// that reaches a stand-in came through the gateway.
func gatewayAgents(t *testing.T, home string) []gatewayAgent {
	oair := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "done", Command: envDump,
		Usage: modeltest.OpenAIUsage{InputTokens: 1300, CachedInputTokens: 1024, OutputTokens: 42}})
	gem := modeltest.NewGemini(t)
	oaic := modeltest.NewOpenAIChat(t)
	const dead = "http://127.0.0.1:9"
	return []gatewayAgent{{
		tool: "codex", cred: "OPENAI_API_KEY", family: "openai", upstream: strings.TrimSuffix(oair.URL, "/v1"),
		env:    map[string]string{agent.CodexBaseURLEnv: dead + "/v1", "HOME": home, "CODEX_HOME": filepath.Join(home, ".codex")},
		prompt: "dump your environment", keyVar: "OPENAI_API_KEY", url: agent.CodexBaseURLEnv,
		before: func(t *testing.T) { staleCodexConfig(t, filepath.Join(home, ".codex"), dead+"/v1") },
		seen: func() []seen {
			var out []seen
			for _, r := range oair.Requests() {
				out = append(out, seen{strings.TrimPrefix(r.Authorization, "Bearer "), openAISeen(r.Usage), r.Streamed})
			}
			return out
		},
	}, {
		tool: "gemini", cred: "GEMINI_API_KEY", family: "gemini", upstream: gem.URL,
		env:    map[string]string{"GOOGLE_GEMINI_BASE_URL": dead, "HOME": home},
		prompt: modeltest.GeminiCommandMarker + envDump, keyVar: "GEMINI_API_KEY", url: "GOOGLE_GEMINI_BASE_URL",
		seen: func() []seen {
			var out []seen
			for _, r := range gem.Requests() {
				u := r.Usage
				out = append(out, seen{r.Key, [4]int64{u.PromptTokens - u.CachedTokens, u.CandidatesTokens, u.CachedTokens, 0}, r.Streamed})
			}
			return out
		},
	}, {
		tool: "opencode", cred: "OPENAI_API_KEY", family: "openai", upstream: strings.TrimSuffix(oaic.URL, "/v1"),
		// opencode runs commands with $SHELL: nologin for the tests' target.
		env:    map[string]string{agent.OpencodeBaseURLEnv: dead + "/v1", "HOME": home, "SHELL": "/bin/sh"},
		prompt: modeltest.OpenAIChatCommandMarker + envDump, keyVar: "OPENAI_API_KEY", url: agent.OpencodeBaseURLEnv,
		seen: func() []seen {
			var out []seen
			for _, r := range oaic.Requests() {
				out = append(out, seen{r.Key, openAISeen(r.Usage), r.Streamed})
			}
			return out
		},
	}}
}

func openAISeen(u modeltest.OpenAIUsage) [4]int64 {
	return [4]int64{u.InputTokens - u.CachedInputTokens, u.OutputTokens, u.CachedInputTokens, 0}
}

// TestGatewayEachAgent is TestGatewayClaude for the other three CLIs:
// agents.yaml points each at a port nothing serves, the executor points
// it at its relay with the session's token for a key, and the gateway
// forwards to the stand-in with the daemon's key. The stand-in sees that
// key on every request and never the token; the agent's environment
// (which its shell tool dumps) holds the token and the relay's URL, never
// the key; the ledger has one row per request the stand-in answered,
// whose tokens and streaming are the stand-in's own, of the right agent
// and person.
func TestGatewayEachAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three agent CLIs")
	}
	home, err := os.MkdirTemp("", "agor-gateway-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor's user writes the agents' settings
	for _, c := range gatewayAgents(t, home) {
		t.Run(c.tool, func(t *testing.T) { testGatewayAgent(t, c) })
	}
}

func testGatewayAgent(t *testing.T, c gatewayAgent) {
	if c.before != nil {
		c.before(t)
	}
	key := "sk-real-" + c.tool + "-5c31"
	yaml := agentsYAML(agenttest.Case{Tool: c.tool, Binary: agenttest.Binary(t, c.tool), Env: c.env})
	h := startWith(t, func(string) string { return yaml }, func(cfg *config.Config) {
		cfg.Gateway.Enabled = true
		cfg.Gateway.Upstreams[c.family] = c.upstream
	})
	h.setCred(t, c.cred, key)
	name, _ := target(t)
	lines := h.prompt(t, name, map[string]any{"agentic_tool": c.tool, "prompt": c.prompt, "cwd": ".",
		"permission_mode": "bypassPermissions", "timeout_ms": 120000})
	if _, result := decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("result %v; stream %v", result, lines)
	}
	reqs := c.seen()
	for i, r := range reqs {
		if r.key != key {
			t.Errorf("request %d reached the stand-in with key %q, want the daemon's", i, r.key)
		}
	}
	checkAgentEnv(t, h, c, key)
	task := h.waitTask(t)
	rows := ledgerRows(t, h, task, len(reqs))
	checkLedger(t, c, name, rows, reqs)
}

// checkAgentEnv: the agent was given the placeholder and the relay, not
// the key (nor any credential).
func checkAgentEnv(t *testing.T, h *harness, c gatewayAgent, key string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.work, "agent-env.txt"))
	if err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
	env := string(b)
	if strings.Contains(env, key) {
		t.Error("the agent's environment holds the real key")
	}
	if !strings.Contains(env, "\n"+c.keyVar+"=agor-gateway\n") || !strings.Contains(env, "\n"+c.url+"=http://127.0.0.1:") {
		t.Errorf("the agent was not pointed at the gateway (%s, %s):\n%s", c.keyVar, c.url, env)
	}
}

// ledgerRows waits for the task's ledger to have n rows (a row is written
// once its answer has been relayed whole, which may be after the turn
// ends) and returns them.
func ledgerRows(t *testing.T, h *harness, task string, n int) []store.Spend {
	t.Helper()
	var rows []store.Spend
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if rows, err = h.d.Store().TaskSpend(task); err != nil {
			t.Fatal(err)
		}
		if len(rows) >= n || time.Now().After(end) {
			return rows
		}
	}
}

// checkLedger compares the ledger with the stand-in's own count, request
// for request (as a set: rows are written as answers end, requests
// noted as they arrive, and a CLI may have two in flight).
func checkLedger(t *testing.T, c gatewayAgent, name string, rows []store.Spend, reqs []seen) {
	t.Helper()
	if len(rows) != len(reqs) || len(reqs) == 0 {
		t.Fatalf("%d ledger rows for %d requests the stand-in answered: %+v", len(rows), len(reqs), rows)
	}
	var want, got []string
	var sum [4]int64
	for _, r := range reqs {
		want = append(want, fmt.Sprint(r.usage, r.streamed))
	}
	for i, g := range rows {
		u := [4]int64{g.Input, g.Output, g.CacheRead, g.CacheWrite}
		got = append(got, fmt.Sprint(u, g.Streamed))
		for k := range sum {
			sum[k] += u[k]
		}
		if g.User != name || g.Agent != c.tool || g.Status != 200 || g.Error != "" {
			t.Errorf("row %d: %+v", i, g)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) || sum[0]+sum[1] == 0 {
		t.Fatalf("ledger (tokens in/out/cache read/write, streamed) %v, the stand-in's own %v", got, want)
	}
	t.Logf("%s: %d requests through the gateway; tokens in/out/cache read/write %v in the ledger and at the stand-in; rows %v",
		c.tool, len(reqs), sum, got)
}

// staleCodexConfig writes the config.toml an earlier run left (agor
// writes it once): its base_url is another executor's relay, or OpenAI's.
func staleCodexConfig(t *testing.T, dir, url string) {
	t.Helper()
	_ = os.MkdirAll(dir, 0o777)
	_ = os.Chmod(dir, 0o777)
	cfg := fmt.Sprintf("model = %q\nmodel_provider = \"agor\"\n\n[model_providers.agor]\nname = \"agor\"\nbase_url = %q\n"+
		"env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n", agent.CodexDefaultModel, url)
	write(t, filepath.Join(dir, "config.toml"), cfg, 0o666)
}
