package terminal

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// The test binary is its own sandbox launcher, as the executor is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LauncherArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// TestConfinedTerminalPlants: what a confined terminal's shell leaves in
// its workspace that runs later unasked (a nested repository whose
// config runs a command) is disabled when the terminal ends, and logged;
// a config of its inert keys is written in its place.
func TestConfinedTerminalPlants(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	var log exectest.LockedBuffer
	f := newFixture(t, Config{
		Sandbox: &sandbox.Policy{Default: sandbox.Off, Self: os.Args[0], TempDir: t.TempDir()},
		Logger:  slog.New(slog.NewTextHandler(&log, nil)),
	})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{Cwd: "work", Sandbox: "workspace"}).TerminalID
	p.send(t, id, "mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > sub/.git/config && echo P=$((1+1))=P\n")
	p.waitOutput(t, id, "P=2=P")
	p.send(t, id, "exit\n")
	p.waitExit(t, id)
	cfg := filepath.Join(f.root, "work", "sub", ".git", "config")
	deadline := time.Now().Add(20 * time.Second) // the cleanup follows the exit; -race under load is slow
	for time.Now().Before(deadline) {
		if _, err := os.Stat(cfg + ".agor-disabled"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b, err := os.ReadFile(cfg); err != nil || strings.Contains(string(b), "fsmonitor") {
		t.Fatalf("the planted config is still in place: %q %v", b, err) // its inert keys (none) are
	}
	if _, err := os.Stat(cfg + ".agor-disabled"); err != nil {
		t.Fatalf("not kept disabled: %v", err)
	}
	if !strings.Contains(log.String(), "fsmonitor = touch /tmp/pwned") {
		t.Errorf("not logged: %s", log.String())
	}
}
