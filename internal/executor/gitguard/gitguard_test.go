package gitguard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(path, mode)
}

// TestRestore: what a confined task did to hooks and config is undone and
// named; the rest of .git (objects, index: a commit) is left alone.
func TestRestore(t *testing.T) {
	repo := t.TempDir()
	git := filepath.Join(repo, ".git")
	write(t, filepath.Join(git, "config"), "[core]\n\tbare = false\n", 0o644)
	write(t, filepath.Join(git, "hooks", "pre-push.sample"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(git, "hooks", "post-merge"), "#!/bin/sh\necho mine\n", 0o755)
	g := Snapshot(repo)

	write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\necho x >> ~/.bashrc\n", 0o755)
	write(t, filepath.Join(git, "config"), "[core]\n\thooksPath = /tmp/evil\n", 0o644)
	_ = os.Remove(filepath.Join(git, "hooks", "post-merge"))
	_ = os.Chmod(filepath.Join(git, "hooks", "pre-push.sample"), 0o777)
	write(t, filepath.Join(git, "index"), "a commit's work", 0o644)

	changed, err := g.Restore()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config changed", "hooks/post-merge removed", "hooks/pre-commit added", "hooks/pre-push.sample changed"}
	if !slices.Equal(changed, want) {
		t.Fatalf("changed %q, want %q", changed, want)
	}
	if _, err := os.Stat(filepath.Join(git, "hooks", "pre-commit")); err == nil {
		t.Error("the planted hook is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(git, "config")); string(b) != "[core]\n\tbare = false\n" {
		t.Errorf("config %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(git, "hooks", "post-merge")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("post-merge back: %v", fi)
	}
	if fi, _ := os.Stat(filepath.Join(git, "hooks", "pre-push.sample")); fi.Mode().Perm() != 0o755 {
		t.Errorf("pre-push.sample mode %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(git, "index")); err != nil {
		t.Error("the index was touched")
	}
	if again, _ := g.Restore(); len(again) != 0 {
		t.Errorf("a second restore changed %q", again)
	}
}

func TestNoRepository(t *testing.T) {
	if changed, err := Snapshot(t.TempDir()).Restore(); len(changed) != 0 || err != nil {
		t.Fatal("a workspace without .git, left alone:", changed, err)
	}
	var g *Guard
	if changed, err := g.Restore(); changed != nil || err != nil {
		t.Fatal(changed, err)
	}
}

// TestRestoreThroughNoLink: without a view, her hook that is a link is
// left when untouched (the first guard removed it), put back when the
// task removed it; a hooks directory the task swapped for a link to hooks of its
// own is disabled, and her hooks are written back into a real one, never
// through the link.
func TestRestoreThroughNoLink(t *testing.T) {
	repo := t.TempDir()
	git := filepath.Join(repo, ".git")
	write(t, filepath.Join(git, "config"), "[core]\n", 0o644)
	write(t, filepath.Join(git, "hooks", "pre-push"), "#!/bin/sh\necho mine\n", 0o755)
	write(t, filepath.Join(repo, "scripts", "hook"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink("../../scripts/hook", filepath.Join(git, "hooks", "post-merge")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	g := Snapshot(repo)
	if changed, err := g.Restore(); len(changed) != 0 || err != nil {
		t.Fatalf("untouched, yet %q %v", changed, err)
	}
	evil := filepath.Join(repo, "evil")
	write(t, filepath.Join(evil, "pre-commit"), "#!/bin/sh\ntouch pwned\n", 0o755)
	if err := os.Rename(filepath.Join(git, "hooks"), filepath.Join(repo, "away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../evil", filepath.Join(git, "hooks")); err != nil {
		t.Fatal(err)
	}
	changed, err := g.Restore()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(changed, "hooks replaced") {
		t.Errorf("changed %q", changed)
	}
	if fi, err := os.Lstat(filepath.Join(git, "hooks")); err != nil || !fi.IsDir() {
		t.Fatalf("hooks now %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(git, "hooks", "pre-push")); string(b) != "#!/bin/sh\necho mine\n" {
		t.Errorf("pre-push %q", b)
	}
	if to, err := os.Readlink(filepath.Join(git, "hooks", "post-merge")); to != "../../scripts/hook" {
		t.Errorf("post-merge, a link, put back as %q %v", to, err)
	}
	if _, err := os.Stat(filepath.Join(evil, "pre-push")); err == nil {
		t.Error("her hook was written through the link")
	}
}
