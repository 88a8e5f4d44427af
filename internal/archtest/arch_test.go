package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agor-sh/agor/"

// Sides are read off the path, so a package's folder says where it stands:
//
//	internal/wire/…      the wire itself: both ends import these
//	internal/executor/…  the per-user executor and what it runs as the user
//	internal/daemon/…    the daemon: lifecycle, pool, broker, store, audit, API
//	internal/ctl/…       what agorctl links besides the wire
//	internal/<leaf>      leaves either side may use (executorunit: the
//	                     executors' units, for the daemon and --no-daemon)
//	…test (last element) test helpers, imported by tests only
//
// A new package lands on a side by where it is created, which is the
// point: the folder is the decision.
var roots = map[string]string{
	"internal/wire":     "wire",
	"internal/executor": "executor",
	"internal/daemon":   "daemon",
	"internal/ctl":      "ctl",
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// ours lists the module's packages with their (non-test) imports of ours.
func ours(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		var mine []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				mine = append(mine, rel)
			}
		}
		p.Imports = mine
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

func sideOf(path string) string {
	switch path {
	case "cmd/agor-daemon":
		return "daemon"
	case "cmd/agor-executor":
		return "executor"
	case "cmd/agorctl":
		return "ctl"
	}
	if strings.HasSuffix(path, "test") {
		return "testing"
	}
	for root, side := range roots {
		if path == root || strings.HasPrefix(path, root+"/") {
			return side
		}
	}
	if rel, ok := strings.CutPrefix(path, "internal/"); ok && !strings.Contains(rel, "/") {
		return "leaf"
	}
	if !strings.HasPrefix(path, "internal/") && !strings.HasPrefix(path, "cmd/") {
		return "tools" // test/…, polkit: the suites' commands and the rule's test
	}
	return "unplaced"
}

// forbidden says why from may not import to, or "".
func forbidden(from, to string) string {
	fs, ts := sideOf(from), sideOf(to)
	switch {
	case strings.HasPrefix(to, "cmd/"):
		return "nothing imports a command"
	case from == "internal/wire/rpc":
		return "rpc imports nothing of ours"
	case from == "internal/wire/rawframe":
		return "rawframe imports nothing of ours"
	case from == "internal/wire/protocol" && to != "internal/wire/rpc":
		return "protocol imports only rpc"
	case from == "internal/wire/apiwire" && to != "internal/wire/protocol":
		return "apiwire imports only protocol"
	case ts == "testing" && fs != "testing" && fs != "tools":
		return "test helpers are for tests"
	case fs == "leaf" && ts != "leaf" && ts != "wire":
		return "a leaf knows no side"
	case fs == "executor" && to == "internal/wire/apiwire":
		return "the executor speaks protocol, not the HTTP API's types"
	case fs != ts && (ts == "executor" || ts == "daemon" || ts == "ctl") && fs != "tools" && fs != "testing":
		return "the " + fs + " side never imports the " + ts + " side (they meet in the wire)"
	}
	return ""
}

// TestNevers: the house's layout rules hold for every import of ours.
func TestNevers(t *testing.T) {
	for _, p := range ours(t) {
		if sideOf(p.ImportPath) == "unplaced" {
			t.Errorf("%s is on no side: put it under one of %v, or make it a leaf of internal/", p.ImportPath, roots)
		}
		for _, imp := range p.Imports {
			if why := forbidden(p.ImportPath, imp); why != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
	}
}

// TestRulesBite: the rules refuse what the house forbids (so TestNevers
// passing means something).
func TestRulesBite(t *testing.T) {
	for _, c := range [][2]string{
		{"internal/daemon/api", "internal/executor/terminal"},
		{"internal/daemon/pool", "internal/executor"},
		{"internal/executor/task", "internal/daemon/broker"},
		{"internal/wire/rpc", "internal/wire/protocol"},
		{"internal/wire/protocol", "internal/executor/agent"},
		{"internal/daemon", "cmd/agor-daemon"},
		{"internal/unixsock", "internal/executor"},
		{"internal/ctl/cli", "internal/daemon/lifecycle"},
		{"cmd/agorctl", "internal/daemon/lifecycle"},
		{"internal/executorunit", "internal/daemon/lifecycle"},
	} {
		if forbidden(c[0], c[1]) == "" {
			t.Errorf("%s → %s allowed", c[0], c[1])
		}
	}
}

// TestRulesAllow: the imports the layout is built on stay allowed (so the
// rules cannot pass by refusing everything).
func TestRulesAllow(t *testing.T) {
	for _, c := range [][2]string{
		{"cmd/agorctl", "internal/ctl/apiclient"},
		{"cmd/agorctl", "internal/ctl/cli"},
		{"internal/ctl/cli", "internal/executorunit"},
		{"internal/daemon/lifecycle", "internal/executorunit"},
		{"internal/daemon/pool", "internal/executorunit"},
		{"internal/ctl/cli", "internal/ctl/apiclient"},
		{"internal/daemon/api", "internal/wire/apiwire"},
		{"internal/executor/terminal", "internal/wire/rawframe"},
		{"internal/daemon/lifecycle", "internal/sandbox"},
		{"internal/sandbox", "internal/wire/protocol"},
		{"test/bench/rpcbench", "internal/executor/exectest"},
	} {
		if why := forbidden(c[0], c[1]); why != "" {
			t.Errorf("%s → %s refused: %s", c[0], c[1], why)
		}
	}
}
