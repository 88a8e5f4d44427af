package task

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/gitguard"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// confinedDir is where confined agents keep their state, beneath HOME,
// one directory a workspace and tool (workspaceDir): apart from the
// user's own (~/.claude, ~/.codex, ~/.gemini, opencode's XDG
// directories, the npm and XDG caches), which a confined agent may not
// write. Otherwise it could plant what an unconfined run reads and runs
// later: hooks in ~/.claude/settings.json, codex's notify or MCP
// commands, a poisoned npx cache. Apart from other workspaces' too: what
// a task in one project leaves there (settings, hooks, MCP servers) is
// read only by confined runs in that project, never by the next one in
// another. A session's cwd is fixed, so its CLI finds its own session
// files there when it resumes.
const confinedDir = ".local/state/agor/confined"

// seeds are the user's own files a confined agent starts from, copied
// (never linked) into its state the first time: what the CLI needs to run
// as the user set it up. Whatever the confined agent then changes there
// is only ever read by confined runs in the same workspace.
var seeds = map[string][]string{
	"claude-code": {".claude/settings.json"},
	"codex":       {".codex/config.toml"},
	"gemini":      {".gemini/settings.json"},
}

// state is one tool's confined state directory.
type state struct {
	tool, dir string
}

func confinedState(tool, home, cwd string) state {
	if home == "" {
		return state{tool: tool}
	}
	return state{tool: tool, dir: filepath.Join(home, confinedDir, workspaceDir(cwd), tool)}
}

// workspaceDir names a workspace's state: its base name, made readable
// (letters, digits, ".", "_" and "-", 32 at most), and 16 hex digits of
// the SHA-256 of its cleaned absolute path, which keep two projects of
// one name apart (and any from the directories of one tool each that
// confinedDir held before: those names end in no hash).
func workspaceDir(cwd string) string {
	c := filepath.Clean(cwd)
	sum := sha256.Sum256([]byte(c))
	name := []byte(filepath.Base(c))
	for i, b := range name {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-') {
			name[i] = '_'
		}
	}
	if len(name) > 32 {
		name = name[:32]
	}
	return string(name) + "-" + hex.EncodeToString(sum[:8])
}

// env points the CLI, and what it runs, at the confined state.
func (st state) env(env []string) []string {
	if st.dir == "" {
		return env
	}
	set := map[string]string{
		"XDG_CACHE_HOME":   filepath.Join(st.dir, "cache"),
		"npm_config_cache": filepath.Join(st.dir, "npm"),
	}
	switch st.tool {
	case "claude-code":
		set["CLAUDE_CONFIG_DIR"] = filepath.Join(st.dir, ".claude")
	case "codex":
		set["CODEX_HOME"] = filepath.Join(st.dir, ".codex")
	case "gemini":
		set["GEMINI_CLI_HOME"] = st.dir // gemini keeps $GEMINI_CLI_HOME/.gemini
	case "opencode":
		set["XDG_CONFIG_HOME"] = filepath.Join(st.dir, "config")
		set["XDG_DATA_HOME"] = filepath.Join(st.dir, "data")
		set["XDG_STATE_HOME"] = filepath.Join(st.dir, "state")
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

// prepare makes the state directory (0700: the agent could not, once
// confined) and seeds it from the user's own files where it has none.
func (st state) prepare(home string) error {
	if st.dir == "" {
		return errors.New("no HOME to keep it in")
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return err
	}
	for _, rel := range seeds[st.tool] {
		seed(filepath.Join(home, rel), filepath.Join(st.dir, rel))
	}
	return nil
}

// seed copies a regular file from to to, unless to exists or from is
// missing (or not a regular file: no link is followed into the state).
func seed(from, to string) {
	if _, err := os.Lstat(to); err == nil {
		return
	}
	fi, err := os.Lstat(from)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(to), 0o700) == nil {
		_ = os.WriteFile(to, data, 0o600)
	}
}

// sharedStateNote says, in the journal, why a session resuming confined
// in a workspace that has no state yet will not be found, when the
// directory every workspace shared before (confinedDir/TOOL) exists: a
// session confined before state was kept per workspace has its record
// there, which no confined run reads any more, since a task of any other
// project may have written any of it. Its CLI then says it could not
// continue the session; nothing starts afresh unasked.
func (s *Service) sharedStateNote(tool, home, session string) {
	shared := filepath.Join(home, confinedDir, tool)
	if fi, err := os.Stat(shared); err == nil && fi.IsDir() {
		s.log().Warn("a confined session resumes where its workspace has no confined state yet; sessions confined before each workspace had its own keep theirs in the shared directory, which confined agents no longer read: start a new session",
			"agent_session", session, "agentic_tool", tool, "shared_state", shared)
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
// the mode's floor), and says what it got (for the task's first event
// and its result; nil: off, with nothing to say); the spec's Cleanup is
// for when the agent is gone.
func (s *Service) confine(p protocol.ExecutePromptParams, floor sandbox.Level, req *agent.Request) (sandbox.Spec, *protocol.SandboxInfo, error) {
	home := agent.Getenv(req.Env, "HOME")
	state := confinedState(p.Tool, home, req.Cwd)
	spec, applied, err := s.Sandbox.ForAtLeast(s.Sandbox.PromptLevel(p.Sandbox), floor, req.Cwd, home, []string{state.dir})
	if err != nil {
		return spec, nil, err
	}
	if applied.Level == string(sandbox.Off) && applied.Warning == "" {
		return spec, nil, nil
	}
	if spec.Level != sandbox.Off {
		_, err := os.Stat(state.dir)
		if fresh := errors.Is(err, fs.ErrNotExist); fresh && req.Resume != "" {
			s.sharedStateNote(p.Tool, home, req.Resume)
		}
		if err := state.prepare(home); err != nil {
			spec.Cleanup()
			return sandbox.Spec{}, nil, fmt.Errorf("the confined agent's state: %w", err)
		}
		req.Wrap = spec.Command
		req.Env = spec.Env(state.env(req.Env))
	}
	return spec, &applied, nil
}

// floor is the least confinement p's turn runs under: its mode's, and the
// level the session last ran confined at (its agent's state is in the
// confined directory: a resumed confined session stays confined).
func (s *Service) floor(p protocol.ExecutePromptParams) sandbox.Level {
	s.mu.Lock()
	before := s.confined[confinedKey(p)]
	s.mu.Unlock()
	if before == "" {
		before = sandbox.Off
	}
	return sandbox.Stricter(modeFloor(p.Tool, p.PermissionMode), before)
}

// level is the level p's turn asks to run at: its request (or the
// policy's level for prompts), at least floor.
func (s *Service) level(p protocol.ExecutePromptParams, floor sandbox.Level) sandbox.Level {
	return sandbox.Stricter(sandbox.Level(s.Sandbox.PromptLevel(p.Sandbox)), floor)
}

// rememberConfined notes the level p's agent ran at, once it ran (a
// pre-warmed agent's counts from its first turn): off is not noted.
func (s *Service) rememberConfined(p protocol.ExecutePromptParams, l sandbox.Level) {
	if l == "" || l == sandbox.Off {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confined == nil {
		s.confined = map[string]sandbox.Level{}
	}
	s.confined[confinedKey(p)] = l
}

func confinedKey(p protocol.ExecutePromptParams) string { return p.SessionID + "\x00" + p.Tool }

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
	if spec.Namespaces { // the view held what exists of sandbox.Protected
		return gitguard.SnapshotView(spec.Cwd, sandbox.Protected)
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
	slog.Warn("a confined agent changed its repository's hooks or config, or left what runs later: put back or disabled", "undone", undone, "err", err)
	if h != nil {
		h.noteUndone(undone)
	}
}
