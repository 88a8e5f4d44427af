package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

func TestLoadAgents(t *testing.T) {
	for _, tc := range []struct{ name, yaml, err string }{
		{"missing file", "", ""},
		{"endpoint", "codex:\n  env:\n    AGOR_CODEX_BASE_URL: http://127.0.0.1:1/v1\n", ""},
		{"relative binary", "codex:\n  binary: bin/codex\n", `codex.binary: "bin/codex" must be absolute or a bare name`},
		{"unknown key", "codex:\n  path: /x\n", "field path not found"},
		{"manager variable", "gemini:\n  env:\n    NOTIFY_SOCKET: /run/x\n", `gemini.env: "NOTIFY_SOCKET" cannot be set`},
		{"activation variable", "gemini:\n  env:\n    LISTEN_FDS: \"3\"\n", `gemini.env: "LISTEN_FDS" cannot be set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agents.yaml")
			if tc.yaml != "" {
				if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadAgents(path)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// An adapter's endpoint set in agents.yaml reaches the agent (the
// executor's own AGOR_* does not), and the key overrides any setting.
func TestAgentsCommandEnv(t *testing.T) {
	t.Setenv("AGOR_EXECUTOR_ROOT", "/x")
	a := Agents{"codex": {Binary: "/opt/codex", Env: map[string]string{"AGOR_CODEX_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "from-config"}}}
	bin, env := a.command("codex", "OPENAI_API_KEY", "sk-jit", "s1", nil)
	joined := strings.Join(env, "\n")
	if bin != "/opt/codex" || !strings.Contains(joined, "AGOR_CODEX_BASE_URL=http://127.0.0.1:9/v1") ||
		!strings.Contains(joined, "OPENAI_API_KEY=sk-jit") || strings.Contains(joined, "from-config") || strings.Contains(joined, "AGOR_EXECUTOR_ROOT") {
		t.Fatalf("command = %s, %q", bin, env)
	}
}

// Under the gateway the relay's address replaces agents.yaml's endpoint
// for every CLI, AGOR_*_BASE_URL included (an executor's own setting, not
// a request's), once each.
func TestAgentsCommandGatewayEnv(t *testing.T) {
	const relay = "http://127.0.0.1:4242"
	for tool, v := range map[string]string{"claude-code": "ANTHROPIC_BASE_URL", "codex": "AGOR_CODEX_BASE_URL",
		"gemini": "GOOGLE_GEMINI_BASE_URL", "opencode": "AGOR_OPENCODE_BASE_URL"} {
		a := Agents{tool: {Binary: "/opt/x", Env: map[string]string{v: "http://127.0.0.1:9"}}}
		_, env := a.command(tool, "K", protocol.GatewayPlaceholder, "s1", gatewayEnv(tool, relay))
		var got []string
		for _, kv := range env {
			if strings.HasPrefix(kv, v+"=") {
				got = append(got, kv)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], v+"="+relay) {
			t.Errorf("%s: %q", tool, got)
		}
	}
}
