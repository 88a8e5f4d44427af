package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
)

// Pre-warming through the daemon, with gemini behind the gateway: POST
// /v1/executors/{user}/prewarm reserves a session id and starts the
// agent with the placeholder; the stand-in model hears nothing
// before the prompt; a prompt of other options does not take the
// reservation; the prompt of the same options gets the reserved session
// and runs prewarmed, its first model request through the gateway.
func TestDaemonPrewarm(t *testing.T) {
	h, c, name := geminiBehindGateway(t)
	opts := map[string]any{"agentic_tool": c.tool, "cwd": ".", "permission_mode": "default"}
	code, out := h.do(t, "POST", "/v1/executors/"+name+"/prewarm", opts)
	reserved, _ := out["session_id"].(string)
	if code != 202 || out["status"] != "started" || reserved == "" {
		t.Fatalf("prewarm: %d %v", code, out)
	}
	h.waitWarm(t, name, reserved)
	time.Sleep(time.Second) // the agent's start-up is over: still nothing may reach the model
	if n := len(c.seen()); n != 0 {
		t.Fatalf("%d model requests before the prompt", n)
	}
	// What the pre-warmed process holds, used before its prompt at its own
	// executor's relay by anything of its person's: refused at the door,
	// and nothing reaches the model.
	if code := h.earlyRequest(t, name, c.env["HOME"]); code != "403" {
		t.Fatalf("a request with the pre-warmed agent's key and relay before its prompt: %s, want refused", code)
	}
	if n := len(c.seen()); n != 0 {
		t.Fatalf("the early request reached the model (%d requests)", n)
	}
	other := gatewayPrompt(t, h, name, map[string]any{"permission_mode": "plan"})
	if other.session == reserved || other.prewarmed {
		t.Fatalf("a prompt in another mode took the pre-warm: %+v", other)
	}
	got := gatewayPrompt(t, h, name, nil)
	if got.session != reserved || !got.prewarmed || got.warm {
		t.Fatalf("the matching prompt: %+v, want session %s prewarmed", got, reserved)
	}
	if !strings.Contains(h.metrics(t), `agor_prewarm_total{outcome="claimed"} 1`) {
		t.Error("the claim was not counted")
	}
}

// geminiBehindGateway is a daemon whose gemini runs behind the gateway,
// against a stand-in (c), with a daemon key; name is the test's person.
func geminiBehindGateway(t *testing.T) (*harness, gatewayAgent, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the gemini CLI")
	}
	home, err := os.MkdirTemp("", "agor-prewarm-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor's user writes the agent's state
	c := gatewayAgents(t, home)[1]
	if c.tool != "gemini" {
		t.Fatalf("want gemini, have %s", c.tool)
	}
	yaml := agentsYAML(agenttest.Case{Tool: c.tool, Binary: agenttest.Binary(t, c.tool), Env: c.env})
	h := startWith(t, func(string) string { return yaml }, func(cfg *config.Config) {
		cfg.Gateway.Enabled = true
		cfg.Gateway.Upstreams[c.family] = c.upstream
	})
	h.setCred(t, c.cred, "sk-real-gemini-77aa")
	name, _ := target(t)
	return h, c, name
}

// TestPrewarmAtExecutorStart: an executor started by a prompt pre-warms
// nothing beside it; one started by an exec pre-warms the agent of the
// session used last, which its follow-up then runs on.
func TestPrewarmAtExecutorStart(t *testing.T) {
	h, _, name := geminiBehindGateway(t)
	first := gatewayPrompt(t, h, name, nil) // starts the executor
	h.waitWarm(t, name, first.session)      // its own agent, kept; nothing else
	m := h.metrics(t)
	for _, none := range []string{`agor_prewarm_total{outcome="started"} 0`, `agor_prewarm_total{outcome="refused"} 0`} {
		if !strings.Contains(m, none) {
			t.Fatalf("the prompt's executor start tried a pre-warm: want %s", none)
		}
	}
	if code, out := h.do(t, "DELETE", "/v1/executors/"+name, nil); code != 200 || out["stopped"] != true {
		t.Fatalf("stop: %d %v", code, out)
	}
	h.waitWarm(t, name)
	if code, out := h.do(t, "POST", "/v1/executors/"+name+"/exec", map[string]any{"argv": []string{"true"}, "cwd": "."}); code != 200 {
		t.Fatalf("exec: %d %v", code, out)
	}
	h.waitWarm(t, name, first.session)
	next := gatewayPrompt(t, h, name, map[string]any{"session_id": first.session})
	if next.session != first.session || !next.prewarmed || next.warm {
		t.Fatalf("the follow-up after the start: %+v, want session %s prewarmed", next, first.session)
	}
}

// earlyRequest sends, from user's exec, a generateContent request the
// way the pre-warmed gemini whose HOME is home would, with the key and
// relay address from its environment, and returns the status.
func (h *harness) earlyRequest(t *testing.T, user, home string) string {
	t.Helper()
	env := processEnv(t, "HOME="+home+"\x00")
	base, key := env["GOOGLE_GEMINI_BASE_URL"], env["GEMINI_API_KEY"]
	if base == "" || key != "agor-gateway" {
		t.Fatalf("the pre-warmed gemini has no gateway address or placeholder: %q %q", base, key)
	}
	code, out := h.do(t, "POST", "/v1/executors/"+user+"/exec", map[string]any{"cwd": ".", "argv": []string{"curl", "-s", "-o", "/dev/null",
		"-w", "%{http_code}", "--max-time", "10", "-H", "x-goog-api-key: " + key, "-H", "content-type: application/json",
		"-d", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, base + "/v1beta/models/gemini-2.5-pro:generateContent"}})
	if code != 200 {
		t.Fatalf("exec: %d %v", code, out)
	}
	s, _ := out["stdout"].(string)
	return s
}

// processEnv is the environment of a process that has an entry starting
// with prefix (its HOME, this test's own directory), so that no other
// test's agent (packages run side by side) is taken for it.
func processEnv(t *testing.T, prefix string) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append([]byte{0}, raw...), []byte("\x00"+prefix)) {
			continue
		}
		env := map[string]string{}
		for _, kv := range strings.Split(string(raw), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		return env
	}
	t.Fatalf("no process has %s", prefix)
	return nil
}

type promptRun struct {
	session         string
	warm, prewarmed bool
}

// gatewayPrompt runs a plain gemini prompt of the pre-warm's options
// (with over's changes) in a new session.
func gatewayPrompt(t *testing.T, h *harness, user string, over map[string]any) promptRun {
	t.Helper()
	body := map[string]any{"agentic_tool": "gemini", "prompt": "say hello", "cwd": ".", "permission_mode": "default", "timeout_ms": 120000}
	for k, v := range over {
		body[k] = v
	}
	var run promptRun
	var result map[string]any
	for _, l := range h.prompt(t, user, body) {
		if s, ok := l["session_id"].(string); ok && s != "" {
			run.session = s
		}
		if r, ok := l["result"].(map[string]any); ok {
			result = r
		}
	}
	if result == nil || result["status"] != "completed" {
		t.Fatalf("prompt %v: result %v", body, result)
	}
	run.warm, run.prewarmed = result["warm"] == true, result["prewarmed"] == true
	return run
}
