package gitguard

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// What cannot be made read-only before it exists, a task's view leaves
// writable: a repository made during the task (nested, or the workspace's
// own after git init), the agent CLIs' and editors' settings where there
// were none. When the task ends, the workspace is scanned for such things
// changed since it began that would make a program run a command later,
// unasked; each is neutralised (renamed NAME.agor-disabled, never
// deleted) and reported with what it would have run.

// Disabled is the suffix a neutralised file or directory gets.
const Disabled = ".agor-disabled"

// settings are the names of the agent CLIs', editors' and tools' project
// settings that run commands (hooks, MCP servers, tool discovery,
// direnv's .envrc), at any depth of the workspace.
var settings = map[string]bool{
	".claude": true, ".mcp.json": true, ".gemini": true, ".codex": true, ".opencode": true,
	"opencode.json": true, "opencode.jsonc": true, ".vscode": true, ".idea": true, ".envrc": true,
	".husky": true, ".pre-commit-config.yaml": true, ".mise.toml": true, "mise.toml": true,
	".devcontainer": true,
}

// runsKeys are git configuration keys (section.key, or a subsection's
// key by its last part) whose value git runs, or which pull in more
// configuration, during ordinary commands.
var runsKeys = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
	"sequence.editor", "credential.helper", "gpg.program", "diff.external", "include.path", "includeif.path",
	".textconv", ".command", ".clean", ".smudge", ".process", ".driver", ".cmd", "uploadpack.packobjectshook",
}

// scanLimits bound a scan of a large workspace.
const (
	maxEntries = 200_000
	maxDepth   = 16
)

// Plants scans root for what was changed at or after since and runs
// later unasked, neutralises each and says what it did. The config and
// hooks of keep (a .git directory whose own the caller puts back) are
// left to the caller.
func Plants(root string, since time.Time, keep string) []string {
	return plants(root, since, keep, nil)
}

// plants is Plants leaving the paths held (relative to root) alone.
func plants(root string, since time.Time, keep string, held map[string]bool) []string {
	var found []string
	seen := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return nil
		}
		if seen++; seen > maxEntries {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(root, path)
		if strings.Count(rel, string(filepath.Separator)) >= maxDepth {
			return filepath.SkipDir
		}
		name := d.Name()
		switch {
		case held[rel]:
			return skipDir(d)
		case name == "node_modules" && d.IsDir():
			return filepath.SkipDir
		case name == ".git":
			found = append(found, gitPlants(rel, path, since, path == keep)...)
			return skipDir(d)
		case settings[name] && changedSince(path, since):
			found = append(found, neutralise(rel, path, "project settings a program reads and may run commands from"))
			return skipDir(d)
		}
		return nil
	})
	return found
}

func skipDir(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// gitPlants looks in one .git (a directory, or a file pointing elsewhere).
func gitPlants(rel, git string, since time.Time, kept bool) []string {
	fi, err := os.Lstat(git)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		if changedSince(git, since) {
			return []string{neutralise(rel, git, "a pointer to a git directory elsewhere, whose config and hooks git would use")}
		}
		return nil
	}
	var out []string
	for _, f := range []string{"commondir", "gitdir"} {
		p := filepath.Join(git, f)
		if changedSince(p, since) {
			out = append(out, neutralise(filepath.Join(rel, f), p, "points git at another directory's config and hooks"))
		}
	}
	if kept {
		return out
	}
	cfg := filepath.Join(git, "config")
	if changedSince(cfg, since) {
		if runs := configRuns(cfg); len(runs) > 0 {
			out = append(out, neutralise(filepath.Join(rel, "config"), cfg, strings.Join(runs, "; ")))
		}
	}
	hooks, _ := os.ReadDir(filepath.Join(git, "hooks"))
	for _, h := range hooks {
		p := filepath.Join(git, "hooks", h.Name())
		if strings.HasSuffix(h.Name(), ".sample") || strings.HasSuffix(h.Name(), Disabled) || !changedSince(p, since) {
			continue
		}
		out = append(out, neutralise(filepath.Join(rel, "hooks", h.Name()), p, "a git hook: "+firstLines(p)))
	}
	return out
}

// changedSince: p's status changed (ctime, which no one can set back) at
// or after since.
func changedSince(p string, since time.Time) bool {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return false
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	if !ctime.Before(since) {
		return true
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return false
	}
	entries, _ := os.ReadDir(p) // a settings directory: any file in it
	for i, e := range entries {
		if i >= 256 {
			break
		}
		if changedSince(filepath.Join(p, e.Name()), since) {
			return true
		}
	}
	return false
}

// configRuns lists the lines of a git config whose keys run something.
func configRuns(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	section := ""
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < 10_000; n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Trim(strings.Fields(strings.Trim(line, "[]") + " x")[0], `"`))
			continue
		}
		key, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		full := section + "." + strings.ToLower(strings.TrimSpace(key))
		for _, k := range runsKeys {
			if full == k || (strings.HasPrefix(k, ".") && strings.HasSuffix(full, k)) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

func firstLines(path string) string {
	b := make([]byte, 160)
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	n, _ := f.Read(b)
	return strings.Join(strings.Fields(string(b[:n])), " ")
}

// neutralise renames path to path+Disabled (or +Disabled.N when taken)
// and says so.
func neutralise(rel, path, what string) string {
	to := path + Disabled
	for i := 1; exists(to) && i < 100; i++ {
		to = fmt.Sprintf("%s%s.%d", path, Disabled, i)
	}
	if err := os.Rename(path, to); err != nil {
		return fmt.Sprintf("%s: %s (could not disable it: %v)", rel, what, err)
	}
	return fmt.Sprintf("%s: %s (disabled: renamed %s)", rel, what, filepath.Base(to))
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
