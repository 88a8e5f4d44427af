// Package agenttest wires each of the four real agent CLIs (installed by
// test/agents.sh into test/.cache/agents) to a stand-in model server on
// 127.0.0.1, for tests and benchmarks that run them through the executor.
package agenttest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agor-sh/agor/internal/agent/modeltest"
)

// Command is what the tool-turn prompt has the stand-ins run.
const Command = "touch made-by-agent"

// Case is one agent CLI and its stand-in.
type Case struct {
	Tool   string            // agentic_tool
	Cred   string            // the credential the agent needs
	Binary string            // absolute path of the CLI
	Env    map[string]string // agents.yaml env: endpoint and HOME
	// Plain and ToolPrompt make the stand-in answer with text, or call
	// the shell tool with Command first.
	Plain, ToolPrompt string
	Requests          func() int // model requests seen so far
}

// Cases starts the four stand-ins (closed when tb ends) and returns the
// cases; home is the agents' HOME, which the executor's user must be able
// to write. Claude's stand-in plays a script: the tool turn first, then
// plain turns.
func Cases(tb testing.TB, home string, plainTurns int) []Case {
	script := []modeltest.AnthTurn{{Text: "done", Bash: Command}}
	for range plainTurns {
		script = append(script, modeltest.AnthTurn{Text: "hello"})
	}
	anth := modeltest.NewAnthropic(tb, script...)
	oair := modeltest.NewOpenAIResponses(tb, modeltest.OpenAIResponsesScript{Text: "done", Command: Command})
	gem := modeltest.NewGemini(tb)
	oaic := modeltest.NewOpenAIChat(tb)
	return []Case{{
		Tool: "claude-code", Cred: "ANTHROPIC_API_KEY", Binary: Binary(tb, "claude-code/node_modules/.bin/claude"),
		Env:   map[string]string{"ANTHROPIC_BASE_URL": anth.URL, "HOME": home, "CLAUDE_CODE_MAX_RETRIES": "0"},
		Plain: "say hello", ToolPrompt: "make the file",
		Requests: func() int { return len(anth.Requests()) },
	}, {
		Tool: "codex", Cred: "OPENAI_API_KEY", Binary: Binary(tb, "codex/node_modules/.bin/codex"),
		Env:   map[string]string{"AGOR_CODEX_BASE_URL": oair.URL, "HOME": home, "CODEX_HOME": filepath.Join(home, ".codex")},
		Plain: "say hello", ToolPrompt: "make the file",
		Requests: func() int { return len(oair.Requests()) },
	}, {
		Tool: "gemini", Cred: "GEMINI_API_KEY", Binary: Binary(tb, "gemini/node_modules/.bin/gemini"),
		Env:   map[string]string{"GOOGLE_GEMINI_BASE_URL": gem.URL, "HOME": home},
		Plain: "say hello", ToolPrompt: modeltest.GeminiCommandMarker + Command,
		Requests: func() int { return len(gem.Requests()) },
	}, {
		Tool: "opencode", Cred: "OPENAI_API_KEY", Binary: Binary(tb, "opencode/node_modules/.bin/opencode"),
		// opencode runs commands with $SHELL, which the executor takes
		// from the account: nologin for nobody, the tests' target user.
		Env:   map[string]string{"AGOR_OPENCODE_BASE_URL": oaic.URL, "HOME": home, "SHELL": "/bin/sh"},
		Plain: "say hello", ToolPrompt: modeltest.OpenAIChatCommandMarker + Command,
		Requests: func() int { return len(oaic.Requests()) },
	}}
}

// Binary is a CLI test/agents.sh installs (rel to test/.cache/agents), as
// an absolute path; it fails tb when missing.
func Binary(tb testing.TB, rel string) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	abs := filepath.Join(filepath.Dir(file), "..", "..", "test", ".cache", "agents", rel)
	if _, err := os.Stat(abs); err != nil {
		tb.Fatalf("agent CLI %s missing (%v): run test/agents.sh", abs, err)
	}
	return abs
}
