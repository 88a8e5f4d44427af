package main

import (
	"os/exec"
	"strings"
	"testing"
)

// agorctl links the API's wire types (internal/apiwire) and the
// executor's (internal/protocol), never the daemon's or the executor's
// insides: no SQLite, store, broker, credential store, pool, API server
// or PTY code.
var forbiddenDeps = []string{
	"modernc.org/sqlite",
	"github.com/creack/pty",
	"github.com/agor-sh/agor/internal/store",
	"github.com/agor-sh/agor/internal/broker",
	"github.com/agor-sh/agor/internal/credstore",
	"github.com/agor-sh/agor/internal/pool",
	"github.com/agor-sh/agor/internal/api",
	"github.com/agor-sh/agor/internal/terminal",
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
	for _, d := range deps {
		for _, f := range forbiddenDeps {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("agorctl links %s", d)
			}
		}
	}
}
