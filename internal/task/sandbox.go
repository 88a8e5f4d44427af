package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/agor-sh/agor/internal/agent"
	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/sandbox"
)

// stateDirs are where each agent CLI keeps its own state, beneath its
// HOME: writable under every sandbox level, so the agent still starts,
// logs in to its stand-in or model, and keeps its sessions.
var stateDirs = map[string][]string{
	"claude-code": {".claude", ".claude.json", ".claude.json.backup"},
	"codex":       {".codex"},
	"gemini":      {".gemini"},
	"opencode":    {".local/share/opencode", ".local/state/opencode", ".config/opencode", ".cache/opencode"},
}

// commonState is written by the CLIs' runtime (Node.js, their caches).
var commonState = []string{".cache", ".npm"}

// agentState is tool's state paths for an agent whose environment is env;
// the directories are made (mode 0700) if missing, since a sandboxed
// agent could not make them itself.
func agentState(tool string, env []string) []string {
	home := envValue(env, "HOME")
	if home == "" {
		return nil
	}
	var out []string
	if h := envValue(env, "CODEX_HOME"); h != "" && tool == "codex" {
		out = append(out, h)
	}
	for _, rel := range append(stateDirs[tool], commonState...) {
		p := filepath.Join(home, rel)
		if filepath.Ext(rel) != ".json" && filepath.Ext(rel) != ".backup" {
			_ = os.MkdirAll(p, 0o700)
		}
		out = append(out, p)
	}
	return out
}

// envValue is key's value in env (the last one wins, as exec's does).
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// confine sets req up to run under the task's sandbox level, and says
// what it got (as the task's first event and in its result); the spec's
// Cleanup is for when the agent is gone.
func (s *Service) confine(p protocol.ExecutePromptParams, req *agent.Request, h *host) (sandbox.Spec, *protocol.SandboxInfo, error) {
	spec, applied, err := s.Sandbox.For(p.Sandbox, req.Cwd, envValue(req.Env, "HOME"), agentState(p.Tool, req.Env))
	if err != nil {
		return spec, nil, err
	}
	if applied.Level == string(sandbox.Off) && applied.Warning == "" {
		return spec, nil, nil
	}
	if spec.Level != sandbox.Off {
		self := s.Sandbox.Self
		req.Wrap = func(argv []string) []string { return sandbox.Command(self, spec, argv) }
		req.Env = spec.Env(req.Env)
	}
	data, _ := json.Marshal(applied)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	h.Emit(agent.Event{Type: protocol.EventSandbox, Data: m})
	return spec, &applied, nil
}
