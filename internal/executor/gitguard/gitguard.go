// Package gitguard keeps a confined task from planting what runs later
// outside the sandbox. A task's view (internal/sandbox) has what exists of
// it read-only; what it can make anew (a nested repository, a git init,
// project settings where there were none) Plants disables when the task
// ends. Where no view could be built, the hooks and config of the
// workspace's repository are snapshotted before and put back after.
package gitguard

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// maxFile bounds what is kept of one guarded file: a hook or a config
// larger than this is restored as removed (a confined task made it so).
const maxFile = 1 << 20

type entry struct {
	data []byte
	mode fs.FileMode
}

// Guard is a workspace as a confined task found it: its repository's
// hooks and config, and when the task began (for Plants).
type Guard struct {
	root  string           // the workspace
	since time.Time        // the scan's start: what changed after is the task's
	git   string           // the .git directory; "" when there is none
	files map[string]entry // relative to git: "config", "hooks/NAME"
	held  map[string]bool  // relative to root: read-only in the work's view
}

// Snapshot keeps what cwd's repository (cwd/.git, a directory) has in
// hooks and config, and notes the time.
func Snapshot(cwd string) *Guard {
	return SnapshotView(cwd, nil)
}

// SnapshotView is Snapshot for work whose view binds the workspace's
// protected paths (relative to cwd) read-only: those that exist now
// cannot be the work's doing, and Plants leaves them (a person's own
// settings, touched a moment before the task, are not taken for its).
func SnapshotView(cwd string, protected []string) *Guard {
	g := &Guard{root: cwd, since: scanFrom(), held: map[string]bool{}}
	for _, rel := range protected {
		if _, err := os.Lstat(filepath.Join(cwd, rel)); err == nil {
			g.held[filepath.Clean(rel)] = true
		}
	}
	git := filepath.Join(cwd, ".git")
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		return g // no repository, or a worktree's .git file: its gitdir lies outside
	}
	g.git, g.files = git, map[string]entry{}
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
	var changed []string
	var err error
	if g.git != "" {
		changed, err = g.restoreGit()
	}
	planted := plants(g.root, g.since, g.git, g.held)
	g.since = scanFrom() // a warm agent's next turn is scanned from here
	return append(changed, planted...), err
}

// restoreGit puts the hooks and config back.
func (g *Guard) restoreGit() ([]string, error) {
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

// scanFrom is now as file times will say it: the kernel stamps them from
// a coarse clock (a tick, up to 10 ms, behind), so a file written just
// after time.Now() can carry an earlier ctime.
func scanFrom() time.Time { return time.Now().Add(-50 * time.Millisecond) }
