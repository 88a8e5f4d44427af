package task

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestConfinedStatePerWorkspace: what a confined agent leaves in its CLI
// state in one project (settings with a hook) is not what the next
// confined agent reads in another, though both have the same name; the
// same project finds it again, as a resumed session finds its records.
// Each workspace's state starts from her own settings. Judged by what a
// second confined process reads, through the launcher.
func TestConfinedStatePerWorkspace(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	home := t.TempDir()
	own, plant := `{"theme":"hers"}`, `{"hooks":{"SessionStart":"touch planted"}}`
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude/settings.json"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(home, "src/proj"), filepath.Join(home, "other/proj")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{Sandbox: &sandbox.Policy{Self: os.Args[0], TempDir: t.TempDir()}}
	confinedSh(t, s, home, a, `echo '`+plant+`' > "$CLAUDE_CONFIG_DIR/settings.json"`)
	if got := confinedSh(t, s, home, b, `cat "$CLAUDE_CONFIG_DIR/settings.json"`); got != own {
		t.Errorf("another project's confined agent reads %q, want her own %q", got, own)
	}
	if got := confinedSh(t, s, home, a, `cat "$CLAUDE_CONFIG_DIR/settings.json"`); got != plant {
		t.Errorf("the same project's reads %q, want what it left, %q", got, plant)
	}
	dirs, _ := filepath.Glob(filepath.Join(home, confinedDir, "proj-*", "claude-code"))
	if len(dirs) != 2 {
		t.Errorf("state directories %q, want one per workspace, named after it", dirs)
	}
}

// confinedSh runs script as a confined claude-code turn in cwd would
// run: the spec and environment confine gives it.
func confinedSh(t *testing.T, s *Service, home, cwd, script string) string {
	t.Helper()
	req := agent.Request{Cwd: cwd, Env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}}
	p := protocol.ExecutePromptParams{SessionID: "s-" + cwd, Tool: "claude-code", Sandbox: "workspace", Cwd: cwd}
	spec, box, err := s.confine(p, sandbox.Off, &req)
	if err != nil || box == nil || req.Wrap == nil {
		t.Fatalf("confine %s: %v %+v", cwd, err, box)
	}
	defer spec.Cleanup()
	argv := req.Wrap([]string{"/bin/sh", "-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = req.Env, cwd
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %v %s", cwd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestWorkspaceDir: a state directory's name is the workspace's base
// name, made safe and short, with a hash of its whole cleaned path.
func TestWorkspaceDir(t *testing.T) {
	long := strings.Repeat("x", 40)
	for cwd, prefix := range map[string]string{
		"/home/alice/proj":    "proj-",
		"/home/alice/proj/":   "proj-",
		"/srv/my proj!":       "my_proj_-",
		"/":                   "_-",
		"/home/alice/" + long: strings.Repeat("x", 32) + "-",
	} {
		got := workspaceDir(cwd)
		if !strings.HasPrefix(got, prefix) || len(got) != len(prefix)+16 {
			t.Errorf("%q: %q, want %q and 16 hex digits", cwd, got, prefix)
		}
	}
	if workspaceDir("/a/proj") == workspaceDir("/b/proj") || workspaceDir("/a/proj") != workspaceDir("/a//proj/") {
		t.Error("the hash is not of the cleaned path alone")
	}
}

// TestSharedStateNoted: a session resuming confined where its workspace
// has no state yet, while the directory every workspace shared before
// exists, is said in the journal (its CLI will not find it).
func TestSharedStateNoted(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	for _, d := range []string{proj, filepath.Join(home, confinedDir, "claude-code", ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var journal strings.Builder
	s := &Service{Sandbox: &sandbox.Policy{Self: os.Args[0], TempDir: t.TempDir()}, Log: slog.New(slog.NewTextHandler(&journal, nil))}
	for _, resume := range []string{"", "sess-1", "sess-1"} {
		req := agent.Request{Cwd: proj, Resume: resume, Env: []string{"HOME=" + home}}
		spec, _, err := s.confine(protocol.ExecutePromptParams{Tool: "claude-code", Sandbox: "workspace"}, sandbox.Off, &req)
		if err != nil {
			t.Fatal(err)
		}
		spec.Cleanup()
		if resume == "" {
			_ = os.RemoveAll(filepath.Join(home, confinedDir, workspaceDir(proj))) // a new session made it: as if none had
		}
	}
	if n := strings.Count(journal.String(), "shared_state="+filepath.Join(home, confinedDir, "claude-code")); n != 1 {
		t.Errorf("said %d times, want once (the first resume in the workspace): %s", n, journal.String())
	}
}
