package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agor-sh/agor/"

// Sides of the wire. Every package under internal/ is on exactly one; a
// new package must be placed here, which is the point: someone decides.
var sides = map[string][]string{
	// The wire itself: both ends import these.
	"wire": {"rpc", "protocol", "apiwire"},
	// The per-user executor and what it runs as the user.
	"executor": {"executor", "task", "agent", "terminal", "procexec", "files", "watch", "fsroot", "childenv"},
	// The daemon: lifecycle, pool, broker, store, audit, API.
	"daemon": {"daemon", "api", "broker", "pool", "lifecycle", "store", "audit", "events", "credstore", "token", "warmcap"},
	// Small leaves either side may use: they know nothing of the other.
	"shared": {"dialback", "slurm", "peer", "logging", "flagenv", "version", "unixsock", "sdnotify", "account", "identity", "sandbox", "config", "doctor", "apiclient"},
	// Test helpers, imported by tests only.
	"testing": {"exectest", "agenttest", "agent/modeltest", "archtest", "dialback/dialbacktest"},
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
	}
	rel, ok := strings.CutPrefix(path, "internal/")
	if !ok {
		return ""
	}
	for side, names := range sides {
		if slices.Contains(names, rel) {
			return side
		}
	}
	return "unplaced"
}

// forbidden says why from may not import to, or "".
func forbidden(from, to string) string {
	fs, ts := sideOf(from), sideOf(to)
	switch {
	case strings.HasPrefix(to, "cmd/"):
		return "nothing imports a command"
	case from == "internal/rpc":
		return "rpc imports nothing of ours"
	case from == "internal/protocol" && to != "internal/rpc":
		return "protocol imports only rpc"
	case from == "internal/apiwire" && to != "internal/protocol":
		return "apiwire imports only protocol"
	case fs == "executor" && ts == "daemon":
		return "the executor side never imports the daemon side (they meet in protocol)"
	case fs == "daemon" && ts == "executor":
		return "the daemon side never imports executor internals (they meet in protocol)"
	case fs == "shared" && (ts == "executor" || ts == "daemon"):
		return "a shared leaf knows neither side"
	case ts == "testing" && fs != "testing" && !strings.HasPrefix(from, "test/"):
		return "test helpers are for tests"
	}
	return ""
}

// TestNevers: the house's layout rules hold for every import of ours.
func TestNevers(t *testing.T) {
	for _, p := range ours(t) {
		if sideOf(p.ImportPath) == "unplaced" {
			t.Errorf("%s is on no side: add it to sides in %s", p.ImportPath, "internal/archtest/arch_test.go")
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
		{"internal/api", "internal/terminal"},
		{"internal/pool", "internal/executor"},
		{"internal/task", "internal/broker"},
		{"internal/rpc", "internal/protocol"},
		{"internal/protocol", "internal/agent"},
		{"internal/daemon", "cmd/agor-daemon"},
		{"internal/unixsock", "internal/executor"},
	} {
		if forbidden(c[0], c[1]) == "" {
			t.Errorf("%s → %s allowed", c[0], c[1])
		}
	}
}
