package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
)

// Nobody answers an agent's permission question, for each of the four
// CLIs: after the daemon's permission timeout it is denied with the
// reason "timeout", the tool does not run, the agent goes back to the
// model (it was told; opencode ends its turn instead), and the turn ends
// completed.
func TestDaemonPermissionTimeoutEachAgent(t *testing.T) { testEachAgent(t, false) }

// A client approves each agent's question through the API: the tool runs
// in cwd as the executor's user, for each of the four CLIs.
func TestDaemonPermissionApprovedEachAgent(t *testing.T) { testEachAgent(t, true) }

func testEachAgent(t *testing.T, approve bool) {
	if testing.Short() {
		t.Skip("runs the four agent CLIs")
	}
	home, err := os.MkdirTemp("", "agor-agents-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor's user writes the agents' settings
	for _, c := range agenttest.Cases(t, home, 0) {
		t.Run(c.Tool, func(t *testing.T) {
			h := startWith(t, func(string) string { return agentsYAML(c) }, func(cfg *config.Config) {
				if !approve {
					cfg.Daemon.PermissionTimeoutMS = 700
				}
			})
			if approve {
				go h.approveAll(t, 60*time.Second)
			}
			h.setCred(t, c.Cred, "sk-test-"+strings.ReplaceAll(c.Tool, "-", "")+"-5e2d")
			name, uid := target(t)
			lines := h.prompt(t, name, map[string]any{"agentic_tool": c.Tool, "prompt": c.ToolPrompt, "cwd": ".", "permission_mode": "default", "timeout_ms": 120000})
			decided, result := decisions(lines)
			if len(decided) == 0 || result == nil || result["status"] != "completed" {
				t.Fatalf("decisions %v, result %v; stream %v", decided, result, lines)
			}
			for _, d := range decided {
				if approve && d["approved"] != true || !approve && (d["approved"] != false || !strings.Contains(fmt.Sprint(d["reason"]), "timeout")) {
					t.Errorf("permission decision %v, want approved=%v", d, approve)
				}
			}
			fi, err := os.Stat(filepath.Join(h.work, "made-by-agent"))
			switch {
			case approve && (err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid)):
				t.Fatalf("the tool did not run as uid %d in cwd: %v; stream %v", uid, err, lines)
			case !approve && err == nil:
				t.Fatal("the tool ran without permission")
			}
			// opencode ends its turn on a refused tool call without telling
			// the model (its one request, now that it asks for no title).
			if n := c.Requests(); n < 2 && (approve || c.Tool != "opencode") {
				t.Fatalf("the agent did not go back to the model after the decision: %d requests", n)
			}
		})
	}
}
