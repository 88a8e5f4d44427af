// Package agenttest wires each of the four real agent CLIs (installed by
// test/agents.sh into test/.cache/agents) to a stand-in model server on
// 127.0.0.1, for tests and benchmarks that run them through the executor.
package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
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
	// Bodies are the model requests seen so far, as sent: what context
	// (earlier turns) the agent gave the model.
	Bodies func() []string
	// Arrivals are when the stand-in's requests came, in order.
	Arrivals func() []time.Time
	// PromptAt is when the stand-in had the first request after after
	// that carries text in a conversation (zero: none yet): what a
	// person's prompt waits for before the model can answer. A request
	// offering no tools is not one (opencode's title request, Claude
	// Code's side requests).
	PromptAt func(text string, after time.Time) time.Time
}

// Cases starts the four stand-ins (closed when tb ends) and returns the
// cases; home is the agents' HOME, which the executor's user must be able
// to write. Claude's stand-in plays a script: the tool turn first, then
// plain turns.
func Cases(tb testing.TB, home string, plainTurns int) []Case {
	return CasesRunning(tb, home, plainTurns, Command)
}

// CasesRunning is Cases whose tool turn runs command (a shell command
// line) instead of Command.
func CasesRunning(tb testing.TB, home string, plainTurns int, command string) []Case {
	script := []modeltest.AnthTurn{{Text: "done", Bash: command}}
	for range plainTurns {
		script = append(script, modeltest.AnthTurn{Text: "hello"})
	}
	return CasesScripted(tb, home, command, script...)
}

// CasesScripted is CasesRunning with Claude's stand-in playing script
// (one AnthTurn per user turn); the other stand-ins answer by the prompt.
func CasesScripted(tb testing.TB, home, command string, script ...modeltest.AnthTurn) []Case {
	anth := modeltest.NewAnthropic(tb, script...)
	oair := modeltest.NewOpenAIResponses(tb, modeltest.OpenAIResponsesScript{Text: "done", Command: command})
	gem := modeltest.NewGemini(tb)
	oaic := modeltest.NewOpenAIChat(tb)
	return []Case{{
		Tool: "claude-code", Cred: "ANTHROPIC_API_KEY", Binary: Binary(tb, "claude-code"),
		Env:   map[string]string{"ANTHROPIC_BASE_URL": anth.URL, "HOME": home, "CLAUDE_CODE_MAX_RETRIES": "0"},
		Plain: "say hello", ToolPrompt: "make the file",
		Requests: func() int { return len(anth.Requests()) },
		Arrivals: anth.Times,
		PromptAt: promptAt(anth.Requests, func(r modeltest.AnthRequest) (time.Time, []byte, bool) { return r.At, r.Body, r.Conversation }),
		Bodies: func() []string {
			return bodies(anth.Requests(), func(r modeltest.AnthRequest) []byte { return r.Body })
		},
	}, {
		Tool: "codex", Cred: "OPENAI_API_KEY", Binary: Binary(tb, "codex"),
		Env:   map[string]string{"AGOR_CODEX_BASE_URL": oair.URL, "HOME": home, "CODEX_HOME": filepath.Join(home, ".codex")},
		Plain: "say hello", ToolPrompt: "make the file",
		Requests: func() int { return len(oair.Requests()) },
		Arrivals: oair.Times,
		PromptAt: promptAt(oair.Requests, func(r modeltest.OpenAIRequest) (time.Time, []byte, bool) { return r.At, r.Body, true }),
		Bodies: func() []string {
			return bodies(oair.Requests(), func(r modeltest.OpenAIRequest) []byte { return r.Body })
		},
	}, {
		Tool: "gemini", Cred: "GEMINI_API_KEY", Binary: Binary(tb, "gemini"),
		Env:   map[string]string{"GOOGLE_GEMINI_BASE_URL": gem.URL, "HOME": home},
		Plain: "say hello", ToolPrompt: modeltest.GeminiCommandMarker + command,
		Requests: func() int { return len(gem.Requests()) },
		Arrivals: gem.Times,
		PromptAt: promptAt(gem.Requests, func(r modeltest.GeminiRequest) (time.Time, []byte, bool) { return r.At, r.Body, true }),
		Bodies: func() []string {
			return bodies(gem.Requests(), func(r modeltest.GeminiRequest) []byte { return r.Body })
		},
	}, {
		Tool: "opencode", Cred: "OPENAI_API_KEY", Binary: Binary(tb, "opencode"),
		// opencode runs commands with $SHELL, which the executor takes
		// from the account: nologin for nobody, the tests' target user.
		Env:   map[string]string{"AGOR_OPENCODE_BASE_URL": oaic.URL, "HOME": home, "SHELL": "/bin/sh"},
		Plain: "say hello", ToolPrompt: modeltest.OpenAIChatCommandMarker + command,
		Requests: func() int { return len(oaic.Requests()) },
		Arrivals: oaic.Times,
		PromptAt: promptAt(oaic.Requests, func(r modeltest.OpenAIChatRequest) (time.Time, []byte, bool) {
			return r.At, r.Body, offersTools(r.Body)
		}),
		Bodies: func() []string {
			return bodies(oaic.Requests(), func(r modeltest.OpenAIChatRequest) []byte { return r.Body })
		},
	}}
}

// promptAt is a Case's PromptAt over a stand-in's requests: of is a
// request's time, body, and whether it is a conversation's.
func promptAt[R any](reqs func() []R, of func(R) (time.Time, []byte, bool)) func(string, time.Time) time.Time {
	return func(text string, after time.Time) time.Time {
		for _, r := range reqs() {
			if at, body, conv := of(r); conv && at.After(after) && strings.Contains(string(body), text) {
				return at
			}
		}
		return time.Time{}
	}
}

// offersTools says an OpenAI chat request offers the model tools.
func offersTools(body []byte) bool {
	var b struct {
		Tools []json.RawMessage `json:"tools"`
	}
	return json.Unmarshal(body, &b) == nil && len(b.Tools) > 0
}

func bodies[R any](reqs []R, body func(R) []byte) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = string(body(r))
	}
	return out
}

// clis are each agentic tool's command, as npm installs it.
var clis = map[string]string{"claude-code": "claude", "codex": "codex", "gemini": "gemini", "opencode": "opencode"}

// Binary is tool's CLI as an absolute path: $AGOR_AGENT_<TOOL> (claude-code
// is AGOR_AGENT_CLAUDE_CODE) when set, else what test/agents.sh installs
// under test/.cache/agents. It fails tb when the file is missing.
func Binary(tb testing.TB, tool string) string {
	tb.Helper()
	envVar := "AGOR_AGENT_" + strings.ToUpper(strings.ReplaceAll(tool, "-", "_"))
	bin := os.Getenv(envVar)
	if bin == "" {
		bin = filepath.Join(moduleRoot(tb), "test", ".cache", "agents", tool, "node_modules", ".bin", clis[tool])
	}
	abs, err := filepath.Abs(bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		tb.Fatalf("%s CLI missing at %s (%v): run test/agents.sh, or set %s", tool, abs, err, envVar)
	}
	return abs
}

// moduleRoot is the directory of go.mod above the test's working directory
// (go test runs a test in its package's directory). Not runtime.Caller:
// under -trimpath (make test) it names the package, not a file on disk.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("no go.mod above %s", dir)
		}
	}
}
