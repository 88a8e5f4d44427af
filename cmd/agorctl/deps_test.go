package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// agorctl links the wire (internal/wire/…), its own side (internal/ctl/…)
// and leaves, never the daemon's or the executor's insides: no SQLite,
// store, broker, credential store, pool, API server or PTY code, and no
// package of the daemon at all. For --no-daemon it starts executors the
// way the daemon would through the leaf both link, internal/executorunit.
var forbiddenDeps = []string{
	"modernc.org/sqlite",
	"github.com/creack/pty",
	"github.com/agor-sh/agor/internal/daemon",
	"github.com/agor-sh/agor/internal/executor",
}

func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	if !slices.Contains(deps, "github.com/agor-sh/agor/internal/executorunit") {
		t.Errorf("agorctl no longer links internal/executorunit: is --no-daemon gone, or has it moved?")
	}
	for _, d := range deps {
		for _, f := range forbiddenDeps {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("agorctl links %s", d)
			}
		}
	}
}
