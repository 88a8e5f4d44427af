package procexec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// The test binary is the sandbox launcher, as the executor is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LauncherArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// policy is a sandbox configuration whose temp directory is its own (the
// tests' roots are beneath the host's /tmp, which must not be writable).
func policy(t *testing.T, required bool) *sandbox.Policy {
	return &sandbox.Policy{Default: sandbox.Off, Required: required, Self: os.Args[0], TempDir: t.TempDir()}
}

// TestExecWorkspace: under workspace, touch ./x works and touch ~/x (the
// root, here the user's home) fails with EROFS (its view) or EACCES
// (Landlock) from the kernel; the
// reply says what was applied.
func TestExecWorkspace(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	cl := setupWith(t, policy(t, false))
	ctx := context.Background()
	res, _, errOut, err := cl.exec(ctx, protocol.ExecParams{Argv: []string{"sh", "-c", "touch ./x && touch ../y"}, Cwd: "work", Sandbox: "workspace"})
	if err != nil || res.ExitCode == 0 || !(strings.Contains(errOut, "Permission denied") || strings.Contains(errOut, "Read-only file system")) {
		t.Fatalf("touch outside: %+v %q %v", res, errOut, err)
	}
	if _, err := os.Stat(filepath.Join(cl.root, "work", "x")); err != nil {
		t.Fatalf("touch ./x under workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cl.root, "y")); err == nil {
		t.Fatal("touch ~/y under workspace was allowed")
	}
	if res.Sandbox == nil || res.Sandbox.Level != "workspace" || !res.Sandbox.Enforced || res.Sandbox.ABI == 0 {
		t.Fatalf("reply's sandbox: %+v", res.Sandbox)
	}
	res, _, _, err = cl.exec(ctx, protocol.ExecParams{Argv: []string{"touch", "../y"}, Cwd: "work", Sandbox: "off"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("off: %+v %v", res, err)
	}
}

// TestExecNoLandlock acts out a kernel without Landlock: required refuses
// with the ABI named; otherwise the command runs unconfined and the reply
// warns.
func TestExecNoLandlock(t *testing.T) {
	t.Setenv(sandbox.ForceABIEnv, "0")
	ctx := context.Background()
	cl := setupWith(t, policy(t, true))
	_, _, _, err := cl.exec(ctx, protocol.ExecParams{Argv: []string{"true"}, Cwd: "work", Sandbox: "workspace"})
	if !rpc.IsCode(err, protocol.CodeExecutorUnavailable) || !strings.Contains(err.Error(), "ABI 0") {
		t.Fatalf("required, no Landlock: %v", err)
	}
	cl = setupWith(t, policy(t, false))
	res, _, _, err := cl.exec(ctx, protocol.ExecParams{Argv: []string{"touch", "../z"}, Cwd: "work", Sandbox: "workspace"})
	if err != nil || res.ExitCode != 0 || res.Sandbox == nil || res.Sandbox.Enforced || !strings.Contains(res.Sandbox.Warning, "ABI 0") {
		t.Fatalf("warn, no Landlock: %+v %v", res, err)
	}
}

// TestExecSandboxNotAllowed: a level the configuration does not allow is
// bad params naming the field.
func TestExecSandboxNotAllowed(t *testing.T) {
	p := policy(t, false)
	p.Allowed = []sandbox.Level{sandbox.Off, sandbox.Workspace}
	cl := setupWith(t, p)
	_, _, _, err := cl.exec(context.Background(), protocol.ExecParams{Argv: []string{"true"}, Cwd: "work", Sandbox: "read-only"})
	if !rpc.IsCode(err, rpc.CodeInvalidParams) || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("read-only not allowed: %v", err)
	}
}

// TestExecGitHooksPutBack: a confined exec that plants a git hook and
// points core.hooksPath elsewhere is refused both by its view (read-only
// there), or, where no view could be built, has both undone when it
// ends, the reply saying so; a commit's own writes to .git stay.
func TestExecGitHooksPutBack(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	cl := setupWith(t, policy(t, false))
	git := filepath.Join(cl.root, "work", ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(git, "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `printf '#!/bin/sh\necho x >> ~/.bashrc\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; ` +
		`printf '[core]\n\thooksPath = /tmp/x\n' > .git/config; echo work > .git/index`
	res, _, _, err := cl.exec(context.Background(), protocol.ExecParams{Argv: []string{"sh", "-c", script}, Cwd: "work", Sandbox: "workspace"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(git, "hooks", "pre-commit")); err == nil {
		t.Error("the planted hook is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(git, "config")); string(b) != "[core]\n" {
		t.Errorf("config %q", b)
	}
	if _, err := os.Stat(filepath.Join(git, "index")); err != nil {
		t.Error("the command's own .git/index is gone")
	}
	want := []string{"config changed", "hooks/pre-commit added"}
	if res.Sandbox != nil && res.Sandbox.View == sandbox.ViewNamespace {
		want = nil // refused as written: nothing to put back
	}
	if res.Sandbox == nil || !slices.Equal(res.Sandbox.Undone, want) {
		t.Errorf("sandbox %+v, want undone %q", res.Sandbox, want)
	}
}

// TestExecPlantsDisabled: what a confined exec makes anew that would run
// later unasked (a nested repository whose config runs a command, Claude
// Code's project settings where there were none) is disabled when it
// ends, not deleted, and the reply says what it would have run. The
// nested config gets its inert keys (none here) written in its place.
func TestExecPlantsDisabled(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	cl := setupWith(t, policy(t, false))
	work := filepath.Join(cl.root, "work")
	script := `mkdir -p vendor/x/.git .claude && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > vendor/x/.git/config && ` +
		`echo '{"hooks":{}}' > .claude/settings.json`
	res, _, _, err := cl.exec(context.Background(), protocol.ExecParams{Argv: []string{"sh", "-c", script}, Cwd: "work", Sandbox: "workspace"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "vendor/x/.git/config")); err != nil || strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the nested config now: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(work, ".claude")); err == nil {
		t.Error(".claude is still in place")
	}
	for _, p := range []string{"vendor/x/.git/config", ".claude"} {
		if _, err := os.Lstat(filepath.Join(work, p+".agor-disabled")); err != nil {
			t.Errorf("%s was not kept disabled: %v", p, err)
		}
	}
	undone := strings.Join(res.Sandbox.Undone, "\n")
	if !strings.Contains(undone, "vendor/x/.git/config: keys that are not inert: core.fsmonitor = touch /tmp/pwned") || !strings.Contains(undone, ".claude: project settings") {
		t.Errorf("the reply says %q", res.Sandbox.Undone)
	}
}
