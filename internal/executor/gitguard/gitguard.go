// Package gitguard keeps a confined task from planting what git runs
// later outside the sandbox: the hooks and the config (core.hooksPath,
// aliases, filters) of a repository in the task's workspace. Landlock
// grants writes to a directory tree as a whole, and a task must still be
// able to commit, so .git stays writable; instead the executor snapshots
// .git/hooks and .git/config before confined work and puts them back
// when it ends, saying what it undid.
package gitguard

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// maxFile bounds what is kept of one guarded file: a hook or a config
// larger than this is restored as removed (a confined task made it so).
const maxFile = 1 << 20

type entry struct {
	data []byte
	mode fs.FileMode
}

// Guard is a repository's hooks and config as they were.
type Guard struct {
	git   string           // the .git directory
	files map[string]entry // relative to git: "config", "hooks/NAME"
}

// Snapshot keeps what cwd's repository (cwd/.git, a directory) has in
// hooks and config; nil when there is none to guard.
func Snapshot(cwd string) *Guard {
	git := filepath.Join(cwd, ".git")
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		return nil // no repository, or a worktree's .git file: its gitdir lies outside
	}
	g := &Guard{git: git, files: map[string]entry{}}
	for _, rel := range g.guarded() {
		if e, ok := read(filepath.Join(git, rel)); ok {
			g.files[rel] = e
		}
	}
	return g
}

// guarded lists the files that count now: config and every hook.
func (g *Guard) guarded() []string {
	out := []string{"config"}
	hooks, _ := os.ReadDir(filepath.Join(g.git, "hooks"))
	for _, h := range hooks {
		out = append(out, filepath.Join("hooks", h.Name()))
	}
	return out
}

func read(path string) (entry, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxFile {
		return entry{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return entry{}, false
	}
	return entry{data: data, mode: fi.Mode().Perm()}, true
}

// Restore puts the hooks and config back as they were at the snapshot and
// returns what it changed ("hooks/pre-commit added", ...), sorted. A nil
// Guard restores nothing.
func (g *Guard) Restore() ([]string, error) {
	if g == nil {
		return nil, nil
	}
	now := g.guarded()
	for rel := range g.files {
		if !slices.Contains(now, rel) {
			now = append(now, rel)
		}
	}
	var changed []string
	var errs []error
	for _, rel := range now {
		what, err := g.restore(rel)
		if what != "" {
			changed = append(changed, rel+" "+what)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.Strings(changed)
	if len(errs) > 0 {
		return changed, fmt.Errorf("restore %s: %v", g.git, errs)
	}
	return changed, nil
}

// restore puts one file back; what says what was undone ("" for nothing).
func (g *Guard) restore(rel string) (what string, err error) {
	path := filepath.Join(g.git, rel)
	was, had := g.files[rel]
	is, has := read(path)
	_, lerr := os.Lstat(path)
	exists := lerr == nil
	switch {
	case !had && !exists:
		return "", nil
	case !had:
		return "added", os.RemoveAll(path)
	case has && bytes.Equal(is.data, was.data) && is.mode == was.mode:
		return "", nil
	case !exists:
		what = "removed"
	default:
		what = "changed"
	}
	if exists {
		if err := os.RemoveAll(path); err != nil {
			return what, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return what, err
	}
	if err := os.WriteFile(path, was.data, was.mode); err != nil {
		return what, err
	}
	return what, os.Chmod(path, was.mode) // WriteFile's mode went through the umask
}
