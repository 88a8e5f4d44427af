package task

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/gitguard"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// agentState is where each agent CLI keeps its own state, beneath its
// HOME: writable under every sandbox level, so the agent still starts,
// reaches its model and keeps its sessions. Dirs are made (0700) if
// missing, since a confined agent could not make them; files are not.
var agentState = map[string]struct{ dirs, files []string }{
	"claude-code": {dirs: []string{".claude"}, files: []string{".claude.json", ".claude.json.backup"}},
	"codex":       {dirs: []string{".codex"}},
	"gemini":      {dirs: []string{".gemini"}},
	"opencode":    {dirs: []string{".local/share/opencode", ".local/state/opencode", ".config/opencode", ".cache/opencode"}},
}

// runtimeDirs are written by the CLIs' runtime (Node.js, their caches).
var runtimeDirs = []string{".cache", ".npm"}

// statePaths is tool's writable state for an agent whose environment is
// env (CODEX_HOME too, for codex).
func statePaths(tool string, env []string) []string {
	home := agent.Getenv(env, "HOME")
	if home == "" {
		return nil
	}
	var out []string
	if h := agent.Getenv(env, "CODEX_HOME"); h != "" && tool == "codex" {
		out = append(out, h)
	}
	st := agentState[tool]
	for _, rel := range append(append(st.dirs, runtimeDirs...), st.files...) {
		out = append(out, filepath.Join(home, rel))
	}
	return out
}

// makeStateDirs makes tool's state directories the agent could not make
// once confined.
func makeStateDirs(tool string, env []string) {
	home := agent.Getenv(env, "HOME")
	if home == "" {
		return
	}
	for _, rel := range append(agentState[tool].dirs, runtimeDirs...) {
		_ = os.MkdirAll(filepath.Join(home, rel), 0o700)
	}
}

// modeFloor is the least confinement a turn runs under, whatever its task
// asked for: codex in default, acceptEdits and plan runs under agor's
// workspace level. Codex's own sandbox (bubblewrap) cannot start under the
// executor's unit, which refuses user namespaces, mount and seccomp, so
// codex is told danger-full-access and agor gives the workspace-write its
// mode promised: approved commands write beneath the cwd only. (Plan
// changes nothing for any agent by refusal: the agent package's
// planRefuses.)
func modeFloor(tool, mode string) sandbox.Level {
	if tool == "codex" && mode != "bypassPermissions" {
		return sandbox.Workspace
	}
	return sandbox.Off
}

// confine sets req up to run under the task's sandbox level (at least
// the mode's floor), and says what it got (as the task's first event and
// in its result); the spec's Cleanup is for when the agent is gone.
func (s *Service) confine(p protocol.ExecutePromptParams, req *agent.Request, h *host) (sandbox.Spec, *protocol.SandboxInfo, error) {
	floor := modeFloor(p.Tool, p.PermissionMode)
	spec, applied, err := s.Sandbox.ForAtLeast(p.Sandbox, floor, req.Cwd, agent.Getenv(req.Env, "HOME"), statePaths(p.Tool, req.Env))
	if err != nil {
		return spec, nil, err
	}
	if applied.Level == string(sandbox.Off) && applied.Warning == "" {
		return spec, nil, nil
	}
	if spec.Level != sandbox.Off {
		makeStateDirs(p.Tool, req.Env)
		req.Wrap = spec.Command
		req.Env = spec.Env(req.Env)
	}
	h.Emit(sandboxEvent(applied))
	return spec, &applied, nil
}

// sandboxEvent is a task's first event when its agent is confined.
func sandboxEvent(applied protocol.SandboxInfo) agent.Event {
	data := map[string]any{"level": applied.Level, "abi": applied.ABI, "enforced": applied.Enforced}
	if applied.Warning != "" {
		data["warning"] = applied.Warning
	}
	return agent.Event{Type: protocol.EventSandbox, Data: data}
}

// guardGit snapshots the hooks and config of the repository a workspace
// holds: the confined agent may write .git (it commits), but git runs
// hooks and reads config later, outside the sandbox (gitguard). nil at
// any other level: read-only cannot write them, off is the user's own.
func guardGit(spec sandbox.Spec) *gitguard.Guard {
	if spec.Level != sandbox.Workspace {
		return nil
	}
	return gitguard.Snapshot(spec.Cwd)
}

// restoreGit puts them back after a turn (and when the agent's process
// is gone: its children may outlive a turn) and says what it undid: an
// error event and a warning in the task's result when h is the turn's
// host, a journal warning always.
func restoreGit(h *host, g *gitguard.Guard) {
	undone, err := g.Restore()
	if len(undone) == 0 && err == nil {
		return
	}
	slog.Warn("a confined agent changed its repository's hooks or config: put back", "undone", undone, "err", err)
	if h != nil {
		h.noteUndone(undone)
	}
}
