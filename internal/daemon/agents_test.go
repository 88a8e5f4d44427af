package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/agent/modeltest"
	"github.com/agor-sh/agor/internal/config"
)

// agentCase is one agent CLI wired to its stand-in model server: the
// agents.yaml entry, the credential it needs, a prompt that makes the
// stand-in call the shell tool, and how many model requests were made.
type agentCase struct {
	tool, cred string
	prompt     string
	entry      func(home string) string // agents.yaml lines
	requests   func() int
}

// agentCLI is a CLI test/agents.sh installs, as an absolute path.
func agentCLI(t *testing.T, rel string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", "test", ".cache", "agents", rel))
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		t.Fatalf("agent CLI %s missing (%v): run test/agents.sh", abs, err)
	}
	return abs
}

func agentCases(t *testing.T) []agentCase {
	const cmd = "touch made-by-agent"
	anth := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "could not", Bash: cmd})
	oair := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "could not", Command: cmd})
	gem := modeltest.NewGemini(t)
	oaic := modeltest.NewOpenAIChat(t)
	return []agentCase{{
		tool: "claude-code", cred: "ANTHROPIC_API_KEY", prompt: "make the file",
		entry: func(home string) string {
			return fmt.Sprintf("  binary: %s\n  env:\n    ANTHROPIC_BASE_URL: %s\n    HOME: %s\n    CLAUDE_CODE_MAX_RETRIES: \"0\"\n",
				agentCLI(t, "claude-code/node_modules/.bin/claude"), anth.URL, home)
		},
		requests: func() int { return len(anth.Requests()) },
	}, {
		tool: "codex", cred: "OPENAI_API_KEY", prompt: "make the file",
		entry: func(home string) string {
			return fmt.Sprintf("  binary: %s\n  env:\n    AGOR_CODEX_BASE_URL: %s\n    HOME: %s\n    CODEX_HOME: %s/.codex\n",
				agentCLI(t, "codex/node_modules/.bin/codex"), oair.URL, home, home)
		},
		requests: func() int { return len(oair.Requests()) },
	}, {
		tool: "gemini", cred: "GEMINI_API_KEY", prompt: modeltest.GeminiCommandMarker + cmd,
		entry: func(home string) string {
			return fmt.Sprintf("  binary: %s\n  env:\n    GOOGLE_GEMINI_BASE_URL: %s\n    HOME: %s\n",
				agentCLI(t, "gemini/node_modules/.bin/gemini"), gem.URL, home)
		},
		requests: func() int { return len(gem.Requests()) },
	}, {
		tool: "opencode", cred: "OPENAI_API_KEY", prompt: modeltest.OpenAIChatCommandMarker + cmd,
		entry: func(home string) string {
			// opencode runs commands with $SHELL, which the executor takes
			// from the account: nologin for the test's target user.
			return fmt.Sprintf("  binary: %s\n  env:\n    AGOR_OPENCODE_BASE_URL: %s\n    HOME: %s\n    SHELL: /bin/sh\n",
				agentCLI(t, "opencode/node_modules/.bin/opencode"), oaic.URL, home)
		},
		requests: func() int { return len(oaic.Requests()) },
	}}
}

// Nobody answers an agent's permission question, for each of the four
// CLIs: after the daemon's permission timeout it is denied with the
// reason "timeout", the tool does not run, the agent goes back to the
// model (it was told), and the turn ends completed.
func TestDaemonPermissionTimeoutEachAgent(t *testing.T) { testEachAgent(t, false) }

// A client approves each agent's question through the API: the tool runs
// in cwd as the executor's user, for each of the four CLIs.
func TestDaemonPermissionApprovedEachAgent(t *testing.T) { testEachAgent(t, true) }

func testEachAgent(t *testing.T, approve bool) {
	if testing.Short() {
		t.Skip("runs the four agent CLIs")
	}
	for _, c := range agentCases(t) {
		t.Run(c.tool, func(t *testing.T) {
			h := startWith(t, func(work string) string {
				home := filepath.Join(work, "home")
				_ = os.MkdirAll(home, 0o777)
				_ = os.Chmod(home, 0o777)
				return c.tool + ":\n" + c.entry(home)
			}, func(cfg *config.Config) {
				if !approve {
					cfg.Daemon.PermissionTimeoutMS = 700
				}
			})
			if approve {
				go h.approveAll(t, 60*time.Second)
			}
			h.setCred(t, c.cred, "sk-test-"+strings.ReplaceAll(c.tool, "-", "")+"-5e2d")
			name, uid := target(t)
			lines := h.prompt(t, name, map[string]any{"agentic_tool": c.tool, "prompt": c.prompt, "cwd": ".", "permission_mode": "default", "timeout_ms": 120000})
			decided, result := decisions(lines)
			if len(decided) == 0 || result == nil || result["status"] != "completed" {
				t.Fatalf("decisions %v, result %v; stream %v", decided, result, lines)
			}
			for _, d := range decided {
				if approve && d["approved"] != true || !approve && (d["approved"] != false || !strings.Contains(fmt.Sprint(d["reason"]), "timeout")) {
					t.Errorf("permission decision %v, want approved=%v", d, approve)
				}
			}
			fi, err := os.Stat(filepath.Join(h.work, "made-by-agent"))
			switch {
			case approve && (err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid)):
				t.Fatalf("the tool did not run as uid %d in cwd: %v; stream %v", uid, err, lines)
			case !approve && err == nil:
				t.Fatal("the tool ran without permission")
			}
			if n := c.requests(); n < 2 {
				t.Fatalf("the agent did not go back to the model after the decision: %d requests", n)
			}
		})
	}
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

// setCred stores a daemon-wide credential, as an admin would.
func (h *harness) setCred(t testing.TB, name, key string) {
	t.Helper()
	if code, out := h.do(t, "PUT", "/v1/credentials/"+name, map[string]any{"value": key, "scope": "daemon"}); code != 200 {
		t.Fatalf("set %s: %d %v", name, code, out)
	}
}
