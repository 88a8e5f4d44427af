package task

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"
)

// The test binary is its own sandbox launcher, as the executor is: the
// confined agents here run through it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LauncherArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// coldRig runs one real CLI's prompts through execute_prompt, with warm
// agents on, on an executor that can be restarted: a new Service on the
// same root, as after the unit restarts, whose daemon names the agent
// session.
type coldRig struct {
	t     *testing.T
	c     agenttest.Case
	d     *daemonSide
	root  string // the executor's root; the prompts run in root/work
	level string // the prompts' sandbox level
	svc   *Service
	conn  *rpc.Conn
	n     int
}

func newColdRig(t *testing.T, c agenttest.Case, level string) *coldRig {
	r := &coldRig{t: t, c: c, d: &daemonSide{key: "sk-cold-test-0001", approve: true}, root: t.TempDir(), level: level}
	if err := os.Mkdir(filepath.Join(r.root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.start()
	return r
}

// start runs a new executor's Service (the last one is closed first).
func (r *coldRig) start() {
	t := r.t
	if r.svc != nil {
		r.svc.Close()
	}
	root, err := fsroot.Open(r.root)
	if err != nil {
		t.Fatal(err)
	}
	svc := &Service{Root: root, Agents: Agents{r.c.Tool: {Binary: r.c.Binary, Env: r.c.Env}},
		Warm:    WarmLimits{Idle: time.Minute, PerUser: 4},
		Sandbox: &sandbox.Policy{Self: os.Args[0], TempDir: t.TempDir()}}
	em := rpc.NewMux()
	svc.Register(em)
	t.Cleanup(func() { svc.Close(); root.Close() })
	_, r.conn = rpctest.Pair(t, em, r.d.mux(), rpc.Options{}, rpc.Options{})
	r.svc = svc
}

// prompt runs text in session s1, continuing agentSession when set (as
// the daemon does once it has one), and returns the result and the text
// the agent answered.
func (r *coldRig) prompt(text, agentSession string) (protocol.ExecutePromptResult, string) {
	r.t.Helper()
	r.n++
	task := fmt.Sprintf("%s-%s-%d", r.c.Tool, r.level, r.n)
	p := prompt(task, text)
	p["agentic_tool"], p["sandbox"], p["timeout_ms"] = r.c.Tool, r.level, 120000
	if agentSession != "" {
		p["agent_session_id"] = agentSession
	}
	var res protocol.ExecutePromptResult
	if err := r.conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil {
		r.t.Fatalf("execute_prompt: %v", err)
	}
	var said strings.Builder
	r.d.mu.Lock()
	for _, m := range r.d.events {
		if m.TaskID == task && m.EventType == protocol.EventTextDelta {
			s, _ := m.Event.Data["text"].(string)
			said.WriteString(s)
		}
	}
	r.d.mu.Unlock()
	return res, said.String()
}

// release asks the executor for the session's warm agent back, as the
// daemon does for the host's cap, and waits until it is gone.
func (r *coldRig) release() {
	r.t.Helper()
	var out protocol.ReleaseWarmAgentResult
	err := r.conn.Call(context.Background(), protocol.MethodReleaseWarmAgent,
		protocol.ReleaseWarmAgentParams{SessionID: "s1", Tool: r.c.Tool, Reason: "test"}, &out)
	if err != nil || !out.Released {
		r.t.Fatalf("release_warm_agent: %+v, %v", out, err)
	}
	r.svc.pool().stopping.Wait()
}

// sent says whether a model request made since the first `since` held
// both texts: what the agent gave the model of the conversation.
func (r *coldRig) sent(since int, texts ...string) bool {
	bodies := r.c.Bodies()
	for _, b := range bodies[min(since, len(bodies)):] {
		all := true
		for _, s := range texts {
			all = all && strings.Contains(b, s)
		}
		if all {
			return true
		}
	}
	return false
}

// recallCases are the four CLIs with stand-ins that answer plainly (the
// Responses stand-in runs a harmless command when not asked to recall).
func recallCases(t *testing.T, home string) []agenttest.Case {
	turn := modeltest.AnthTurn{Text: "Noted."}
	return agenttest.CasesScripted(t, home, "true", turn, turn, turn, turn)
}

// TestResumeRecalls: for each real CLI, a word given in the first prompt
// is recalled by follow-ups that run after the warm agent is gone:
// released for the host's cap, and again after an executor restart, with
// the daemon naming the agent session. Each follow-up is a new process
// resuming the session; the stand-in answers with the earlier user
// messages it was sent, so the recall is the CLI's own history. Two cold
// resumes in a row: gemini-cli 0.61 lost the session on the second. Under
// the confined levels the CLI keeps its state in the confined directory,
// where the resume must find it.
func TestResumeRecalls(t *testing.T) {
	levels := []string{"off"}
	if sandbox.ABI() > 0 {
		levels = append(levels, "workspace", "read-only")
	}
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			home := agentHome(t)
			for _, c := range recallCases(t, home) {
				t.Run(c.Tool, func(t *testing.T) { testResumeRecalls(t, newColdRig(t, c, level)) })
			}
		})
	}
}

func testResumeRecalls(t *testing.T, r *coldRig) {
	word := fmt.Sprintf("kestrel%06x", rand.Uint32()>>8)
	first, _ := r.prompt("Please remember the word "+word+".", "")
	if first.Status != "completed" || first.AgentSessionID == "" {
		t.Fatalf("first prompt: %+v %+v", first, first.Error)
	}
	for i, how := range []string{"released", "executor restarted"} {
		r.release()
		if how == "executor restarted" {
			r.start()
		}
		since := len(r.c.Bodies())
		ask := fmt.Sprintf("%s (%d)", modeltest.RecallMarker, i+1)
		res, said := r.prompt(ask, first.AgentSessionID)
		t.Logf("%s/%s after %s: %s warm=%v session %s, answered %.200q", r.c.Tool, r.level, how, res.Status, res.Warm, res.AgentSessionID, said)
		if res.Status != "completed" || res.Warm {
			t.Fatalf("follow-up after the agent was %s: %+v %+v", how, res, res.Error)
		}
		if res.AgentSessionID != first.AgentSessionID {
			t.Errorf("follow-up ran in agent session %q, want %q", res.AgentSessionID, first.AgentSessionID)
		}
		if !r.sent(since, ask, word) {
			t.Errorf("after the agent was %s, no model request had %q with the first prompt's %q: the session started afresh", how, ask, word)
		}
		if !strings.Contains(said, modeltest.RecallPrefix) || !strings.Contains(said, word) {
			t.Errorf("after the agent was %s, the answer %q does not recall %q", how, said, word)
		}
	}
	if r.c.Tool == "gemini" {
		r.geminiRecorded(first.AgentSessionID)
	}
}

// geminiRecorded wants gemini's record of the session only where the
// level keeps the agent's state: the confined directory when confined,
// else ~/.gemini; the resumes found it there.
func (r *coldRig) geminiRecorded(session string) {
	r.t.Helper()
	home := r.c.Env["HOME"]
	work, _ := filepath.EvalSymlinks(filepath.Join(r.root, "work"))
	kept, apart := home, confinedState("gemini", home, work).dir
	if r.level != "off" {
		kept, apart = apart, kept
	}
	records := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".gemini", "tmp", "*", "chats", "session-*-"+session[:8]+"*.jsonl"))
		return m
	}
	if len(records(kept)) == 0 || len(records(apart)) != 0 {
		r.t.Errorf("gemini's records of %s: %q under %s, %q under %s; want them only under the first", session, records(kept), kept, records(apart), apart)
	}
}

// TestResumeUnknownSession: a follow-up naming an agent session its CLI
// does not have fails saying it could not continue that session, and
// nothing of it reaches the model: no conversation starts afresh unasked.
func TestResumeUnknownSession(t *testing.T) {
	home := agentHome(t)
	for _, c := range recallCases(t, home) {
		t.Run(c.Tool, func(t *testing.T) {
			r := newColdRig(t, c, "off")
			missing := "7d2c1e0a-5b4f-4c3d-9e8f-0a1b2c3d4e5f"
			if c.Tool == "opencode" {
				missing = "ses_0123456789abcdefABCDEFGHIJ"
			}
			ask := "Is anyone there? " + modeltest.RecallMarker
			res, said := r.prompt(ask, missing)
			t.Logf("%s: %s %+v, answered %q", c.Tool, res.Status, res.Error, said)
			if res.Status != "failed" || res.Error == nil || !strings.Contains(res.Error.Message, "could not continue agent session "+missing) {
				t.Errorf("result %+v %+v: want failed, saying it could not continue agent session %s", res, res.Error, missing)
			}
			if r.sent(0, "Is anyone there?") {
				t.Error("the prompt reached the model: a new conversation was started")
			}
		})
	}
}
