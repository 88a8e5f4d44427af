package e2e

import (
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

// screenAgent is one CLI's interactive UI behind the gateway, with its
// stand-in model.
type screenAgent struct {
	tool, cred, key string
	yaml            func(work string) string
	tune            func(*config.Config)
	model           string // "" : the adapter's default
	ready           string // on the screen once the UI takes input
	answer          string // the stand-in's reply to the question
	submit          string // the key that sends a message
	quit            string // the command that makes the UI exit
	// quitShown, when set, is on the screen once the UI has taken quit
	// whole: gemini completes a slash command as it is typed, and a key
	// sent before its list of completions shows is taken by the list.
	quitShown string
	// resuming, when set, is what a reopened UI shows while it loads the
	// session, taking no keys, and what it shows once it is done and takes
	// them (gemini's footer, "? for shortcuts", is drawn while it still
	// resumes: a /quit sent then was lost, CI once; its input box is not).
	resuming [2]string
	keys     func() []string
	bodies   func() []string
}

// word is what the person tells the agent in its UI, and what the
// headless follow-up must recall; answer is the stand-in's reply.
const (
	word   = "PELICAN"
	answer = "ACKNOWLEDGED"
)

func screenAgents(t *testing.T) []screenAgent {
	const dead = "http://127.0.0.1:9" // agents.yaml's URLs: what reaches a stand-in came through the gateway
	home, err := os.MkdirTemp("", "agor-screen-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor's user writes the agents' settings
	anth := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: answer}, modeltest.AnthTurn{Text: "unused"})
	oair := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: answer})
	gem := modeltest.NewGemini(t)
	oaic := modeltest.NewOpenAIChat(t)
	return []screenAgent{{
		tool: "claude-code", cred: "ANTHROPIC_API_KEY", key: "sk-ant-real-7e1", model: "stand-in",
		yaml: claudeSettings(agenttest.Binary(t, "claude-code"), dead), tune: gatewayOn(anth.URL),
		ready: "for shortcuts", answer: answer, submit: "\r", quit: "/exit",
		keys: func() []string {
			var out []string
			for _, r := range anth.Requests() {
				out = append(out, r.APIKey)
			}
			return out
		},
		bodies: func() []string {
			var out []string
			for _, r := range anth.Requests() {
				out = append(out, string(r.Body))
			}
			return out
		},
	}, {
		// A model the catalog of codex 0.169 offers no upgrade for: for one
		// it does, the UI first asks whether to switch (the person answers).
		tool: "codex", cred: "OPENAI_API_KEY", key: "sk-real-codex-9b4", model: "gpt-6-sol",
		yaml: staticYAML(agenttest.Case{Tool: "codex", Binary: agenttest.Binary(t, "codex"), Env: map[string]string{
			agent.CodexBaseURLEnv: dead + "/v1", "HOME": home, "CODEX_HOME": filepath.Join(home, ".codex")}}),
		tune:  upstream("openai", strings.TrimSuffix(oair.URL, "/v1"), "gpt-6-sol"),
		ready: "for shortcuts", answer: answer, submit: "\r", quit: "/quit",
		keys: func() []string {
			var out []string
			for _, r := range oair.Requests() {
				out = append(out, strings.TrimPrefix(r.Authorization, "Bearer "))
			}
			return out
		},
		bodies: func() []string {
			var out []string
			for _, r := range oair.Requests() {
				out = append(out, string(r.Body))
			}
			return out
		},
	}, {
		tool: "gemini", cred: "GEMINI_API_KEY", key: "sk-real-gemini-3d8",
		yaml: staticYAML(agenttest.Case{Tool: "gemini", Binary: agenttest.Binary(t, "gemini"), Env: map[string]string{
			"GOOGLE_GEMINI_BASE_URL": dead, "HOME": home}}),
		tune:  upstream("gemini", gem.URL, agent.GeminiDefaultModel),
		ready: "Type your message", answer: modeltest.GeminiText, submit: "\r", quit: "/quit", quitShown: "Exit the cli", resuming: [2]string{"Resuming session", "Type your message"},
		keys: func() []string {
			var out []string
			for _, r := range gem.Requests() {
				out = append(out, r.Key)
			}
			return out
		},
		bodies: func() []string {
			var out []string
			for _, r := range gem.Requests() {
				out = append(out, string(r.Body))
			}
			return out
		},
	}, {
		tool: "opencode", cred: "OPENAI_API_KEY", key: "sk-real-opencode-5a2",
		// opencode runs commands with $SHELL: nologin for the tests' target.
		yaml: staticYAML(agenttest.Case{Tool: "opencode", Binary: agenttest.Binary(t, "opencode"), Env: map[string]string{
			agent.OpencodeBaseURLEnv: dead + "/v1", "HOME": home, "SHELL": "/bin/sh"}}),
		tune:  upstream("openai", strings.TrimSuffix(oaic.URL, "/v1"), agent.OpencodeDefaultModel),
		ready: "ctrl+p commands", answer: modeltest.OpenAIChatText, submit: "\r", quit: "/exit",
		keys: func() []string {
			var out []string
			for _, r := range oaic.Requests() {
				out = append(out, r.Key)
			}
			return out
		},
		bodies: func() []string {
			var out []string
			for _, r := range oaic.Requests() {
				out = append(out, string(r.Body))
			}
			return out
		},
	}}
}

// staticYAML is c's agents.yaml, whatever the work directory.
func staticYAML(c agenttest.Case) func(string) string {
	return func(string) string { return agentsYAML(c) }
}

// upstream turns the gateway on with family's requests going to url,
// model priced.
func upstream(family, url, model string) func(*config.Config) {
	return func(cfg *config.Config) {
		cfg.Gateway.Enabled = true
		cfg.Gateway.Upstreams[family] = url
		cfg.Gateway.Prices[model] = config.Price{Input: 1, Output: 10, CacheRead: 0.5, CacheWrite: 2}
	}
}

// TestInteractiveEachAgent opens each real CLI's own UI through the
// daemon, as a person's agorctl agent does: on a PTY in her executor, a
// prompt task with the gateway's credential. A question typed in it is
// answered by the stand-in, which sees the daemon's key on every
// request; the ledger counts them to her. Detached and attached again,
// it is the same process, its answer in the scrollback; once it exits,
// the task ends completed with the agent's session, a headless
// follow-up of the same session recalls the word said in the UI, and
// the session opened in the UI again shows it.
func TestInteractiveEachAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent CLIs' UIs")
	}
	for _, c := range screenAgents(t) {
		t.Run(c.tool, func(t *testing.T) { testScreenAgent(t, c) })
	}
}

func testScreenAgent(t *testing.T, c screenAgent) {
	h := startWith(t, c.yaml, c.tune)
	h.setCred(t, c.cred, c.key)
	name, _ := target(t)
	s := h.openScreen(t, name, map[string]any{"agentic_tool": c.tool, "cwd": ".", "permission_mode": "default",
		"model": c.model, "interactive": map[string]any{"cols": 120, "rows": 40}})
	term := h.attach(t, name, s.terminal)
	term.waitScreen(t, c.ready, 2*time.Minute)
	term.typeIn(t, "Remember the word "+word+".", c.submit)
	term.waitScreen(t, c.answer, 2*time.Minute)
	for i, k := range c.keys() {
		if k != c.key {
			t.Errorf("request %d reached the stand-in with key %q, want the daemon's", i, k)
		}
	}
	term.close() // detached: the UI runs on
	again := h.attach(t, name, s.terminal)
	again.replaying = true                     // the UIs ask nothing later on
	again.waitScreen(t, c.answer, time.Minute) // the scrollback
	if pid := screenPID(t, h, name, s.terminal); pid != int(s.pid) {
		t.Fatalf("attached again to pid %d, the UI was %v", pid, s.pid)
	}
	if code := again.quit(t, c); code != 0 {
		t.Fatalf("the UI exited %d", code)
	}
	res := s.result(t)
	if res["status"] != "completed" || res["agent_session_id"] == nil {
		t.Fatalf("result %v", res)
	}
	checkScreenLedger(t, h, c, name, s.task)
	checkRecall(t, h, c, name, s.session)
	reopen(t, h, c, name, s.session)
}

// reopen opens the session's UI again: the agent resumes it there, its
// screen showing what was said in the first.
func reopen(t *testing.T, h *harness, c screenAgent, name, session string) {
	t.Helper()
	s := h.openScreen(t, name, map[string]any{"session_id": session, "agentic_tool": c.tool, "cwd": ".",
		"permission_mode": "default", "model": c.model, "interactive": map[string]any{"cols": 120, "rows": 40}})
	term := h.attach(t, name, s.terminal)
	term.waitScreen(t, word, 2*time.Minute)
	if c.resuming[0] != "" {
		term.waitScreen(t, c.resuming[0], time.Minute)
		term.seen.Reset() // what counts comes after
		term.waitScreen(t, c.resuming[1], time.Minute)
	}
	if code := term.quit(t, c); code != 0 {
		t.Fatalf("the reopened UI exited %d", code)
	}
	if res := s.result(t); res["status"] != "completed" {
		t.Fatalf("reopened: result %v", res)
	}
}

// screenPID is the pid the executor lists for terminal id.
func screenPID(t *testing.T, h *harness, name, id string) int {
	t.Helper()
	_, out := h.do(t, "GET", "/v1/executors/"+name+"/terminals", nil)
	terms, _ := out["terminals"].([]any)
	for _, x := range terms {
		if m := x.(map[string]any); m["terminal_id"] == id {
			return int(m["pid"].(float64))
		}
	}
	t.Fatalf("terminal %s is not listed: %v", id, out)
	return 0
}

// checkScreenLedger: one ledger row per request the stand-in answered,
// each hers and the agent's.
func checkScreenLedger(t *testing.T, h *harness, c screenAgent, name, task string) {
	t.Helper()
	n := len(c.keys())
	rows := ledgerRows(t, h, task, n)
	if len(rows) != n || n == 0 {
		t.Fatalf("%d ledger rows for %d requests the stand-in answered: %+v", len(rows), n, rows)
	}
	for i, r := range rows {
		if r.User != name || r.Agent != c.tool || r.Status != 200 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
}

// checkRecall: a headless prompt of the session asks what was said
// before, and the stand-in's recall (from the history the agent sent)
// holds the word typed in the UI.
func checkRecall(t *testing.T, h *harness, c screenAgent, name, session string) {
	t.Helper()
	lines := h.prompt(t, name, map[string]any{"session_id": session, "agentic_tool": c.tool, "cwd": ".",
		"prompt": modeltest.RecallMarker, "permission_mode": "default", "model": c.model, "timeout_ms": 120000})
	if _, result := decisions(lines); result == nil || result["status"] != "completed" {
		t.Fatalf("follow-up: result %v; stream %v", result, lines)
	}
	for _, b := range c.bodies() {
		if strings.Contains(b, modeltest.RecallMarker) && strings.Contains(b, word) {
			return
		}
	}
	t.Fatalf("no request of the follow-up holds the word said in the UI: %d requests", len(c.bodies()))
}
