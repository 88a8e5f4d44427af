package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// realRig runs prompts of one real agent CLI, against its stand-in,
// through execute_prompt with warm agents on.
type realRig struct {
	t    *testing.T
	c    agenttest.Case
	d    *daemonSide
	svc  *Service
	cwd  string
	call func(p map[string]any) protocol.ExecutePromptResult
	stop func(task string) error
	// prewarm calls prewarm_agent (prewarm_real_test.go).
	prewarm func(p map[string]any) protocol.PrewarmAgentResult
	n       int
}

func newRealRig(t *testing.T, c agenttest.Case, approve bool) *realRig {
	d := &daemonSide{key: "sk-warm-test-0001", approve: approve}
	conn, cwd, svc := setupService(t, d, func(s *Service) {
		s.Agents = Agents{c.Tool: {Binary: c.Binary, Env: c.Env}}
		s.Warm = WarmLimits{Idle: time.Minute, PerUser: 4}
	})
	r := &realRig{t: t, c: c, d: d, svc: svc, cwd: cwd}
	r.call = func(p map[string]any) protocol.ExecutePromptResult {
		var res protocol.ExecutePromptResult
		if err := conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil {
			t.Fatalf("execute_prompt: %v", err)
		}
		return res
	}
	r.prewarm = func(p map[string]any) protocol.PrewarmAgentResult {
		var res protocol.PrewarmAgentResult
		if err := conn.Call(context.Background(), protocol.MethodPrewarmAgent, p, &res); err != nil {
			t.Fatalf("prewarm_agent: %v", err)
		}
		return res
	}
	r.stop = func(task string) error {
		return conn.Call(context.Background(), protocol.MethodStopTask, map[string]string{"task_id": task, "reason": "test"}, nil)
	}
	return r
}

func (r *realRig) params(session, text, mode string) map[string]any {
	r.n++
	p := prompt(fmt.Sprintf("%s-%d", r.c.Tool, r.n), text)
	p["agentic_tool"], p["session_id"], p["permission_mode"], p["timeout_ms"] = r.c.Tool, session, mode, 120000
	return p
}

// prompt runs one turn and wants it completed, warm or cold as said.
func (r *realRig) prompt(session, text, mode string, warm bool) protocol.ExecutePromptResult {
	r.t.Helper()
	res := r.call(r.params(session, text, mode))
	if res.Status != "completed" || res.Warm != warm {
		r.t.Fatalf("%q: %+v, want completed with warm=%v", text, res, warm)
	}
	return res
}

// sawTogether wants a model request holding both texts: the agent gave
// the model the earlier turn with the new one.
func (r *realRig) sawTogether(earlier, now string) {
	r.t.Helper()
	for _, b := range r.c.Bodies() {
		if strings.Contains(b, now) && strings.Contains(b, earlier) {
			return
		}
	}
	r.t.Fatalf("no model request has %q with %q: the earlier turn was lost", now, earlier)
}

// warm is the session's warm agent.
func (r *realRig) warm(session string) agent.Live {
	r.t.Helper()
	w := r.svc.pool()
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.agents[session+"\x00"+r.c.Tool]
	if a == nil {
		r.t.Fatalf("session %s has no warm agent", session)
	}
	return a.live
}

// warmPid is the session's warm agent's process.
func (r *realRig) warmPid(session string) int {
	r.t.Helper()
	return r.warm(session).Pid()
}

// planned counts the model requests told that plan mode is active
// (Claude Code's reminder in plan mode).
func (r *realRig) planned() int {
	n := 0
	for _, b := range r.c.Bodies() {
		if strings.Contains(b, "Plan mode is active") {
			n++
		}
	}
	return n
}

func (r *realRig) events(task string) []message {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	var out []message
	for _, m := range r.d.events {
		if m.TaskID == task {
			out = append(out, m)
		}
	}
	return out
}

func agentHome(t *testing.T) string {
	if testing.Short() {
		t.Skip("runs the four agent CLIs")
	}
	home, err := os.MkdirTemp("", "agor-warm-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return home
}

// For each real CLI: the follow-up runs warm and the model sees the
// earlier turn; a warm agent killed between turns is resumed cold with
// nothing lost; then a change of permission mode takes effect, live on
// the same process (all four switch from default to plan): plan keeps
// the tool from running, where default would have asked and been
// approved (Claude Code's plan asks too: its model is told plan mode is
// active instead).
func TestWarmRealAgents(t *testing.T) {
	home := agentHome(t)
	script := []modeltest.AnthTurn{{Text: "Noted."}, {Text: "It was pelican-7."}, {Text: "Noted too."},
		{Text: "done", Bash: agenttest.Command}}
	for _, c := range agenttest.CasesScripted(t, home, agenttest.Command, script...) {
		t.Run(c.Tool, func(t *testing.T) {
			r := newRealRig(t, c, true) // every question asked is approved
			r.prompt("s1", "remember the word pelican-7", "default", false)
			second := r.prompt("s1", "which word did I give you?", "default", true)
			r.sawTogether("pelican-7", "which word did I give you?")

			// A crash: the agent's whole process group dies, once what a
			// resume needs is on disk (Claude Code writes its transcript
			// up to a second after the turn's result).
			if c.Tool == "claude-code" {
				waitFor(t, "Claude Code wrote the turn", func() bool {
					files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", second.AgentSessionID+".jsonl"))
					for _, f := range files {
						if b, _ := os.ReadFile(f); strings.Contains(string(b), "It was pelican-7.") {
							return true
						}
					}
					return false
				})
			}
			pid := r.warmPid("s1")
			if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the agent died", func() bool {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				return err != nil || strings.Contains(string(b), ") Z ")
			})
			r.prompt("s1", "and remember teal-3", "default", false)
			r.sawTogether("pelican-7", "and remember teal-3")

			// plan: the tool must not run, though the daemon would
			// approve any question (the earlier mode, default, asks).
			pid = r.warmPid("s1")
			if !r.warm("s1").CanSwitchMode("plan") {
				t.Fatal("the agent cannot switch to plan live")
			}
			_ = os.Remove(filepath.Join(r.cwd, "made-by-agent")) // codex's stand-in runs it every turn
			if n := r.planned(); n != 0 {
				t.Fatalf("%d model requests in plan mode before the change", n)
			}
			res := r.call(r.params("s1", c.ToolPrompt, "plan"))
			if res.Status != "completed" || !res.Warm || r.warmPid("s1") != pid {
				t.Fatalf("mode change: %+v on process %d, want completed, warm, on %d", res, r.warmPid("s1"), pid)
			}
			if c.Tool == "claude-code" {
				if r.planned() == 0 {
					t.Fatal("the model was not told plan mode is active")
				}
			} else if _, err := os.Stat(filepath.Join(r.cwd, "made-by-agent")); err == nil {
				t.Fatal("the tool ran under plan")
			}
			t.Logf("%s: mode change ran warm=%v", c.Tool, res.Warm)
		})
	}
}

// Claude Code through execute_prompt: a session's prompts in acceptEdits,
// default and plan run on its one warm process, each mode in effect
// (acceptEdits runs the command unasked, default asks, plan's model is
// told plan mode is active). Logs the plan prompt's time beside a restart
// (a rotated key: spawn and resume, what a mode change used to cost).
func TestWarmRealClaudeModeLive(t *testing.T) {
	home := agentHome(t)
	var c agenttest.Case
	for _, k := range agenttest.CasesScripted(t, home, agenttest.Command, modeltest.AnthTurn{Text: "ready"},
		modeltest.AnthTurn{Bash: agenttest.Command, Text: "done"}, modeltest.AnthTurn{Bash: agenttest.Command, Text: "done"},
		modeltest.AnthTurn{Text: "planned"}, modeltest.AnthTurn{Text: "restarted"}) {
		if k.Tool == "claude-code" {
			c = k
		}
	}
	r := newRealRig(t, c, true)
	r.prompt("s1", "get ready", "default", false)
	pid := r.warmPid("s1")
	made := filepath.Join(r.cwd, "made-by-agent")
	for _, step := range []struct {
		mode string
		asks int
	}{{"acceptEdits", 0}, {"default", 1}} {
		_ = os.Remove(made)
		p := r.params("s1", c.ToolPrompt, step.mode)
		if res := r.call(p); res.Status != "completed" || !res.Warm || r.warmPid("s1") != pid {
			t.Fatalf("%s: %+v on process %d, want completed, warm, on %d", step.mode, res, r.warmPid("s1"), pid)
		}
		asks := 0
		for _, m := range r.events(p["task_id"].(string)) {
			if m.EventType == protocol.EventPermissionAsked {
				asks++
			}
		}
		if _, err := os.Stat(made); err != nil || asks != step.asks {
			t.Fatalf("%s: %d questions, made: %v; want %d, made", step.mode, asks, err, step.asks)
		}
	}
	begin := time.Now()
	r.prompt("s1", "plan it", "plan", true)
	live := time.Since(begin)
	if r.warmPid("s1") != pid || r.planned() == 0 {
		t.Fatalf("plan: process %d (was %d), %d requests told plan mode is active", r.warmPid("s1"), pid, r.planned())
	}
	r.d.mu.Lock()
	r.d.key = "sk-warm-test-0002"
	r.d.mu.Unlock()
	begin = time.Now()
	r.prompt("s1", "go on", "plan", false)
	t.Logf("prompt changing the mode on the warm process: %v; prompt restarting it (spawn + resume): %v", live, time.Since(begin))
}

// stop_task in the middle of a warm agent's turn (a long command running)
// stops the turn; the session goes on with its next prompt.
func TestWarmRealAgentsStop(t *testing.T) {
	home := agentHome(t)
	// Long only while the file long is in the cwd: codex's stand-in runs
	// the command on every turn, and its "get ready" and the turn after
	// the stop each slept the whole minute (two of this package's four
	// minutes under -race, the CPUs idle).
	const command = "[ ! -e long ] || sleep 60"
	for _, c := range agenttest.CasesScripted(t, home, command, modeltest.AnthTurn{Text: "ready"},
		modeltest.AnthTurn{Text: "done", Bash: command}, modeltest.AnthTurn{Text: "hello"}) {
		t.Run(c.Tool, func(t *testing.T) {
			r := newRealRig(t, c, true) // default mode, every question approved (Claude Code refuses bypassPermissions as root)
			r.prompt("s1", "get ready", "default", false)
			long := filepath.Join(r.cwd, "long")
			if err := os.WriteFile(long, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			p := r.params("s1", c.ToolPrompt, "default")
			task := p["task_id"].(string)
			done := make(chan protocol.ExecutePromptResult, 1)
			go func() { done <- r.call(p) }()
			waitFor(t, "the command started", func() bool {
				for _, m := range r.events(task) {
					if m.EventType == protocol.EventToolCall {
						return true
					}
				}
				return false
			})
			time.Sleep(300 * time.Millisecond)
			stopped := time.Now()
			if err := r.stop(task); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if res.Status != "cancelled" || !res.Warm {
				t.Fatalf("stopped turn: %+v", res)
			}
			t.Logf("stopped after %v", time.Since(stopped))
			if err := os.Remove(long); err != nil {
				t.Fatal(err)
			}
			next := r.call(r.params("s1", c.Plain, "default"))
			if next.Status != "completed" {
				t.Fatalf("after the stop: %+v", next)
			}
			t.Logf("%s: the prompt after the stop ran warm=%v; %d \"sleep 60\" left running", c.Tool, next.Warm, countCmdline("sleep\x0060\x00"))
			begin := time.Now()
			r.svc.Close()
			t.Logf("warm agents closed in %v", time.Since(begin))
		})
	}
}

// countCmdline counts the processes whose command line is cmdline.
func countCmdline(cmdline string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == cmdline {
			n++
		}
	}
	return n
}
