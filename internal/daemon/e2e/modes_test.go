package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/sandbox"
)

// modesCommand is the modes matrix's tool turn: who ran it, into ran.txt
// in the cwd, and whether a write outside the cwd got through.
const modesCommand = `id -un > ran.txt; (echo out > "$HOME/outside.txt" && echo outside:ok || echo outside:denied) >> ran.txt 2>&1; pwd`

// TestModesEachAgent runs the four real agent CLIs in each permission mode
// through daemon and executor, every question approved, and judges by
// what is on disk: the command's file exists, is the user's and holds
// their name; plan leaves no file for any agent (refused, and read-only);
// codex's default and acceptEdits run its commands under agor's workspace
// level (it is told danger-full-access: its own sandbox cannot start under
// the executor's unit), so its write outside the cwd is refused by the
// kernel. The real-systemd suite runs the same matrix under the shipped
// unit.
func TestModesEachAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the four agent CLIs")
	}
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	for _, mode := range []string{"default", "acceptEdits", "bypassPermissions", "plan"} {
		home, err := os.MkdirTemp("", "agor-modes-home")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		_ = os.Chmod(home, 0o777)
		for _, c := range agenttest.CasesRunning(t, home, 0, modesCommand) {
			t.Run(mode+"/"+c.Tool, func(t *testing.T) {
				_ = os.Remove(filepath.Join(home, "outside.txt"))
				h := startWith(t, func(string) string { return agentsYAML(c) }, nil)
				go h.approveAll(t, 60*time.Second)
				h.setCred(t, c.Cred, "sk-test-"+strings.ReplaceAll(c.Tool, "-", "")+"-m0de")
				name, uid := target(t)
				lines := h.prompt(t, name, map[string]any{"agentic_tool": c.Tool, "prompt": c.ToolPrompt, "cwd": ".",
					"permission_mode": mode, "timeout_ms": 120000})
				decided, result := decisions(lines)
				if result == nil || result["status"] != "completed" {
					t.Fatalf("result %v; stream %v", result, lines)
				}
				ran, err := os.ReadFile(filepath.Join(h.work, "ran.txt"))
				if mode == "plan" {
					if err == nil {
						t.Fatalf("plan changed the disk: ran.txt holds %q; decisions %v", ran, decided)
					}
					for _, d := range decided {
						if d["approved"] != false {
							t.Errorf("plan approved %v", d)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("the command never ran: %v; decisions %v; stream %v", err, decided, lines)
				}
				fi, _ := os.Stat(filepath.Join(h.work, "ran.txt"))
				if got := strings.SplitN(string(ran), "\n", 2)[0]; got != name || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
					t.Errorf("ran.txt %q owned by %d, want %s's (%d)", ran, fi.Sys().(*syscall.Stat_t).Uid, name, uid)
				}
				confined := c.Tool == "codex" && mode != "bypassPermissions"
				if want := map[bool]string{true: "outside:denied", false: "outside:ok"}[confined]; !strings.Contains(string(ran), want) {
					t.Errorf("write outside the cwd: want %s in %q", want, ran)
				}
			})
		}
	}
}
