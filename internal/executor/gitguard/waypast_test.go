package gitguard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/sandbox"
)

// The ways past the post-run guard that were proven against its first
// form (a deny-list of keys, a line parser, a walk that stopped at its
// limits and skipped node_modules): each plants what a later unconfined
// git runs, and the test runs that git, as the person would, and fails
// when the planted command ran. Where the plant runs nothing with the
// git here (state git refuses, a pointer), the test asks that it be
// disabled and reported. Each case is its own repository in its own
// workspace, made before the guard's snapshot (the person's) or after
// (the task's).

// needGit skips where there is no git to plant for.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// gitEnv is git as a person with no configuration of her own runs it.
func gitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a",
		"GIT_COMMITTER_EMAIL=a@b", "GIT_EDITOR=true")
}

// gitIn runs git in dir and fails the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

// later runs git in dir as the person would after the task, whatever it
// says, and reports whether the planted command ran (it touches marker).
func later(t *testing.T, marker, dir string, args ...string) bool {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(t.TempDir())
	out, _ := cmd.CombinedOutput()
	_, err := os.Stat(marker)
	if err == nil {
		t.Logf("git %v in %s ran the plant: %s", args, dir, out)
	}
	return err == nil
}

// plant is one way past: setup makes the person's workspace (before the
// snapshot), task plants in it; then run, if set, is what the person
// runs later, in the directory it names. report is a path the guard's
// report must name (it disabled something there).
type plant struct {
	name   string
	view   bool // the task ran in the view: sandbox.Protected were read-only
	setup  func(t *testing.T, root string)
	task   func(t *testing.T, root, marker string)
	run    []string // the directory (relative to root), then git's arguments
	report string
}

func (p plant) try(t *testing.T) {
	root, marker := t.TempDir(), filepath.Join(t.TempDir(), "pwned")
	if p.setup != nil {
		p.setup(t, root)
		time.Sleep(100 * time.Millisecond) // the person's own, before the scan's margin
	}
	g := Snapshot(root)
	if p.view {
		g = SnapshotView(root, sandbox.Protected)
	}
	p.task(t, root, marker)
	got, err := g.Restore()
	if err != nil {
		t.Logf("restore: %v", err)
	}
	report := strings.Join(got, "\n")
	if p.report != "" && !strings.Contains(report, p.report) {
		t.Errorf("the report does not name %s:\n%s", p.report, report)
	}
	if len(p.run) > 0 && later(t, marker, filepath.Join(root, p.run[0]), p.run[1:]...) {
		t.Errorf("a later git %v ran what the task planted; the guard said:\n%s", p.run[1:], report)
	}
}

// fsmonitor is a config that makes git status run touch marker.
func fsmonitor(marker string) string { return "\tfsmonitor = \"touch " + marker + ";:\"\n" }

// initRepo makes a repository at root/rel (git init) for a plant.
func initRepo(t *testing.T, root, rel string, args ...string) string {
	t.Helper()
	dir := filepath.Join(root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, append([]string{"init", "-q"}, args...)...)
	return dir
}

func appendTo(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// configPlants are keys written where the line parser did not look, or
// that its deny-list lacked, in a nested repository the task made.
func configPlants() []plant {
	nested := func(cfg func(marker string) string) func(t *testing.T, root, marker string) {
		return func(t *testing.T, root, marker string) {
			dir := initRepo(t, root, "vendor/lib")
			appendTo(t, filepath.Join(dir, ".git/config"), cfg(marker))
		}
	}
	status := []string{"vendor/lib", "status"}
	return []plant{
		{name: "key on the header's line", task: nested(func(m string) string { return "[core] fsmonitor = \"touch " + m + ";:\"\n" }),
			run: status, report: "vendor/lib/.git/config"},
		{name: "comment after the header", task: nested(func(m string) string { return "[core] # tidy\n" + fsmonitor(m) }),
			run: status, report: "vendor/lib/.git/config"},
		{name: "continuation line hides the section", task: nested(func(m string) string {
			return "[core]\n\tx = a \\\n[alias]\n" + fsmonitor(m)
		}), run: status, report: "vendor/lib/.git/config"},
		{name: "case", task: nested(func(m string) string { return "[CoRe]\n\tFsMonitor = \"touch " + m + ";:\"\n" }),
			run: status, report: "vendor/lib/.git/config"},
		{name: "a line longer than the scanner's", task: nested(func(m string) string {
			return "[alias]\n\tx = " + strings.Repeat("a", 70_000) + "\n[core]\n" + fsmonitor(m)
		}), run: status, report: "vendor/lib/.git/config"},
		{name: "past 10000 lines", task: nested(func(m string) string {
			return "[alias]\n" + strings.Repeat("\tx = y\n", 10_001) + "[core]\n" + fsmonitor(m)
		}), run: status, report: "vendor/lib/.git/config"},
		{name: "quoted subsection: remote.NAME.uploadpack, a key the deny-list lacked", task: func(t *testing.T, root, marker string) {
			src := initRepo(t, root, "src")
			gitIn(t, src, "commit", "-q", "--allow-empty", "-m", "one")
			dir := initRepo(t, root, "vendor/lib")
			appendTo(t, filepath.Join(dir, ".git/config"), fmt.Sprintf("[remote \"origin\"]\n\turl = %s\n\tuploadpack = \"touch %s; git-upload-pack\"\n", src, marker))
		}, run: []string{"vendor/lib", "fetch", "-q", "origin"}, report: "vendor/lib/.git/config"},
		{name: "an include file the person's config names, changed", setup: func(t *testing.T, root string) {
			dir := initRepo(t, root, "vendor/lib")
			appendTo(t, filepath.Join(root, "included.gitconfig"), "[user]\n\tname = a\n")
			appendTo(t, filepath.Join(dir, ".git/config"), "[include]\n\tpath = ../../../included.gitconfig\n")
		}, task: func(t *testing.T, root, marker string) {
			appendTo(t, filepath.Join(root, "included.gitconfig"), "[core]\n"+fsmonitor(marker))
		}, run: status, report: "included.gitconfig"},
		{name: "an unreadable config", task: func(t *testing.T, root, marker string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads a file of mode 0: TestUnreadableCountsAsDangerous puts the failure in openat's place")
			}
			nested(func(m string) string { return "[core]\n" + fsmonitor(m) })(t, root, marker)
			if err := os.Chmod(filepath.Join(root, "vendor/lib/.git/config"), 0); err != nil {
				t.Fatal(err)
			}
		}, report: "vendor/lib/.git/config"},
	}
}

// repoPlants are repositories not named .git, or where the walk did not
// look.
func repoPlants() []plant {
	bare := func(rel string) func(t *testing.T, root, marker string) {
		return func(t *testing.T, root, marker string) {
			dir := initRepo(t, root, rel, "--bare")
			appendTo(t, filepath.Join(dir, "config"), "[core]\n\tbare = false\n\tworktree = "+root+"\n"+fsmonitor(marker))
		}
	}
	inNodeModules := func(t *testing.T, root, marker string) {
		dir := initRepo(t, root, "node_modules/left-pad")
		appendTo(t, filepath.Join(dir, ".git/config"), "[core]\n"+fsmonitor(marker))
	}
	deep := strings.Repeat("d/", 17) + "lib"
	return []plant{
		{name: "a bare repository", task: bare("tools/cache"), run: []string{"tools/cache", "status"}, report: "tools/cache/config"},
		{name: "a separate git dir: git init --separate-git-dir", task: func(t *testing.T, root, marker string) {
			if err := os.MkdirAll(filepath.Join(root, "w"), 0o755); err != nil {
				t.Fatal(err)
			}
			gitIn(t, filepath.Join(root, "w"), "init", "-q", "--separate-git-dir", filepath.Join(root, "sep"))
			appendTo(t, filepath.Join(root, "sep/config"), "[core]\n\tworktree = "+filepath.Join(root, "w")+"\n"+fsmonitor(marker))
		}, run: []string{"sep", "status"}, report: "sep/config"},
		{name: "a .git file pointing outside the workspace", task: func(t *testing.T, root, marker string) {
			elsewhere := initRepo(t, t.TempDir(), "other")
			appendTo(t, filepath.Join(root, "wt/.git"), "gitdir: "+filepath.Join(elsewhere, ".git")+"\n")
		}, report: "wt/.git"},
		{name: "a repository in node_modules", task: inNodeModules, run: []string{"node_modules/left-pad", "status"},
			report: "node_modules/left-pad/.git/config"},
		{name: "deeper than 16 levels", task: func(t *testing.T, root, marker string) {
			dir := initRepo(t, root, deep)
			appendTo(t, filepath.Join(dir, ".git/config"), "[core]\n"+fsmonitor(marker))
		}, run: []string{deep, "status"}, report: deep + "/.git/config"},
	}
}

// ownPlants are what the workspace's own repository reads that the view
// leaves writable.
func ownPlants() []plant {
	own := func(t *testing.T, root string) {
		initRepo(t, root, ".")
		gitIn(t, root, "config", "extensions.worktreeConfig", "true")
		gitIn(t, root, "commit", "-q", "--allow-empty", "-m", "one")
		gitIn(t, root, "commit", "-q", "--allow-empty", "-m", "two")
	}
	return []plant{
		{name: "config.worktree", view: true, setup: own, task: func(t *testing.T, root, marker string) {
			appendTo(t, filepath.Join(root, ".git/config.worktree"), "[core]\n"+fsmonitor(marker))
		}, run: []string{".", "status"}, report: ".git/config.worktree"},
		{name: "a new worktree's config.worktree", view: true, setup: own, task: func(t *testing.T, root, marker string) {
			gitIn(t, root, "worktree", "add", "-q", "wt2")
			appendTo(t, filepath.Join(root, ".git/worktrees/wt2/config.worktree"), "[core]\n"+fsmonitor(marker))
		}, run: []string{"wt2", "status"}, report: ".git/worktrees/wt2/config.worktree"},
		{name: "a rebase stopped with exec lines to come", view: true, setup: own, task: func(t *testing.T, root, marker string) {
			editor := filepath.Join(t.TempDir(), "editor")
			appendTo(t, editor, "#!/bin/sh\nprintf 'break\\nexec touch "+marker+"\\n' > \"$1\"\n")
			_ = os.Chmod(editor, 0o755)
			cmd := exec.Command("git", "rebase", "-q", "-i", "HEAD~1")
			cmd.Dir, cmd.Env = root, append(gitEnv(t.TempDir()), "GIT_SEQUENCE_EDITOR="+editor)
			_ = cmd.Run() // it stops at break
		}, run: []string{".", "rebase", "--continue"}, report: ".git/rebase-merge"},
		{name: "a sequencer todo with exec", view: true, setup: own, task: func(t *testing.T, root, marker string) {
			appendTo(t, filepath.Join(root, ".git/sequencer/todo"), "exec touch "+marker+"\n")
			appendTo(t, filepath.Join(root, ".git/sequencer/head"), "0000000000000000000000000000000000000000\n")
		}, report: ".git/sequencer"},
		{name: "bisect state", view: true, setup: own, task: func(t *testing.T, root, marker string) {
			appendTo(t, filepath.Join(root, ".git/BISECT_LOG"), "git bisect start\n")
		}, report: ".git/BISECT_LOG"},
		{name: "alternates pointing outside", task: func(t *testing.T, root, marker string) {
			initRepo(t, root, "sub")
			appendTo(t, filepath.Join(root, "sub/.git/objects/info/alternates"), "/home/other/.git/objects\n")
		}, report: "sub/.git/objects/info/alternates"},
	}
}

// settingsPlants are agent, editor and tool settings no list named.
func settingsPlants() []plant {
	file := func(rel, data string) func(t *testing.T, root, marker string) {
		return func(t *testing.T, root, marker string) { appendTo(t, filepath.Join(root, rel), data) }
	}
	return []plant{
		{name: ".lfsconfig", task: file(".lfsconfig", "[lfs \"customtransfer.x\"]\n\tpath = sh\n"), report: ".lfsconfig"},
		{name: ".zed", task: file(".zed/tasks.json", "[]"), report: ".zed"},
		{name: ".cursor", task: file("app/.cursor/mcp.json", "{}"), report: "app/.cursor"},
		{name: ".npmrc", task: file(".npmrc", "node-options=--require ./evil.js\n"), report: ".npmrc"},
	}
}

// TestWaysPast: each way past the first guard is closed.
func TestWaysPast(t *testing.T) {
	needGit(t)
	for _, set := range [][]plant{configPlants(), repoPlants(), ownPlants(), settingsPlants()} {
		for _, p := range set {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				p.try(t)
			})
		}
	}
}

// TestWayPastManyFiles: a task that makes more files than the first
// guard's walk would visit (200,000) before its plant.
func TestWayPastManyFiles(t *testing.T) {
	needGit(t)
	if testing.Short() {
		t.Skip("makes 200,001 files")
	}
	plant{name: "many", task: func(t *testing.T, root, marker string) {
		many(t, filepath.Join(root, "aaa"), 200_001)
		dir := initRepo(t, root, "zzz")
		appendTo(t, filepath.Join(dir, ".git/config"), "[core]\n"+fsmonitor(marker))
	}, run: []string{"zzz", "status"}, report: "zzz/.git/config"}.try(t)
}

// many makes n files beneath dir, 1000 a directory: hard links to one
// file a directory (a link costs a tenth of a new file; ext4 allows
// 65,000 links to one), which a walk counts as it counts files.
func many(t testing.TB, dir string, n int) {
	t.Helper()
	for d := 0; d*1000 < n; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%04d", d))
		first := filepath.Join(sub, fmt.Sprintf("f%06d", d*1000))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(first, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for i := d*1000 + 1; i < min(n, (d+1)*1000); i++ {
			if err := os.Link(first, filepath.Join(sub, fmt.Sprintf("f%06d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
}
