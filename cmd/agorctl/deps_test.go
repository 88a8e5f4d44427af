package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// agorctl links the wire (internal/wire/…), its own side (internal/ctl/…)
// and leaves, never the daemon's or the executor's insides: no SQLite,
// store, broker, credential store, pool, API server or PTY code. The one
// daemon package it links is lifecycle, for --no-daemon, which starts
// executors the way the daemon would.
var forbiddenDeps = []string{
	"modernc.org/sqlite",
	"github.com/creack/pty",
	"github.com/agor-sh/agor/internal/daemon",
	"github.com/agor-sh/agor/internal/executor",
}

// allowedDeps are exceptions to forbiddenDeps.
var allowedDeps = []string{"github.com/agor-sh/agor/internal/daemon/lifecycle"}

func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, d := range deps {
		if slices.Contains(allowedDeps, d) {
			continue
		}
		for _, f := range forbiddenDeps {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("agorctl links %s", d)
			}
		}
	}
}
