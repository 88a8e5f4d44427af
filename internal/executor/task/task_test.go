package task

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// fakeAgent stands in for a CLI adapter: it shows what the host gives an
// adapter (env with the key, cwd, resume) and uses the host as one would.
type fakeAgent struct{}

func (fakeAgent) CredentialKey() string { return "FAKE_API_KEY" }

func (fakeAgent) Run(ctx context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	h.Emit(agent.Event{Type: protocol.EventMessageStart, Data: map[string]any{"role": "assistant"}})
	h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": "cwd=" + req.Cwd + " resume=" + req.Resume + " key=" + envOf(req.Env, "FAKE_API_KEY")}})
	if mark := envOf(req.Env, "FAKE_MARK"); mark != "" { // set in agents.yaml
		h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": "mark=" + mark}})
	}
	if strings.Contains(req.Prompt, "ask") {
		d := h.Ask(ctx, "Bash", json.RawMessage(`{"command":"touch x"}`))
		h.Emit(agent.Event{Type: protocol.EventPermissionDecided, Data: map[string]any{"approved": d.Approved, "reason": d.Reason}})
	}
	if strings.Contains(req.Prompt, "hang") {
		<-ctx.Done()
		return agent.Result{}, ctx.Err()
	}
	return agent.Result{Status: "completed", MessageCount: 1, AgentSession: "agent-" + req.TaskID,
		Usage: agent.Usage{InputTokens: 11, OutputTokens: 7, CacheReadTokens: 3, CacheWriteTokens: 2}}, nil
}

func envOf(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

func init() { agent.Register("fake", fakeAgent{}) }

// message is one report_message as the daemon side received it, with its
// event decoded.
type message struct {
	protocol.ReportMessage
	Event protocol.Event
}

// daemonSide answers the executor's calls the way the daemon's broker does.
type daemonSide struct {
	mu      sync.Mutex
	events  []message
	key     string
	approve bool
	onEvent func(message)          // called with mu held, as each event arrives
	warm    [][]protocol.WarmAgent // each warm_agents report, in order
}

func (d *daemonSide) mux() *rpc.Mux {
	m := rpc.NewMux()
	m.Register(protocol.MethodGetAPIKey, func(_ context.Context, r *rpc.Request) (any, error) {
		if d.key == "" {
			return nil, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonCredentialNotFound, "no FAKE_API_KEY")
		}
		return protocol.GetAPIKeyResult{APIKey: d.key}, nil
	})
	m.Register(protocol.MethodRequestPermission, func(context.Context, *rpc.Request) (any, error) {
		return protocol.RequestPermissionResult{Approved: d.approve, Reason: "test"}, nil
	})
	m.Register(protocol.MethodReportMessage, func(_ context.Context, r *rpc.Request) (any, error) {
		var msg message
		_ = json.Unmarshal(r.Params, &msg.ReportMessage)
		_ = json.Unmarshal(msg.EventData, &msg.Event)
		d.mu.Lock()
		if d.onEvent != nil {
			d.onEvent(msg)
		}
		d.events = append(d.events, msg)
		d.mu.Unlock()
		return nil, nil
	})
	m.Register(protocol.MethodWarmAgents, rpc.Method(func(_ context.Context, p protocol.WarmAgentsParams) (any, error) {
		d.mu.Lock()
		d.warm = append(d.warm, p.Agents)
		d.mu.Unlock()
		return nil, nil
	}))
	return m
}

func setup(t testing.TB, d *daemonSide) (*rpc.Conn, string) {
	return setupWith(t, d, nil)
}

// setupWith is setup with the executor's agent settings.
func setupWith(t testing.TB, d *daemonSide, agents Agents) (*rpc.Conn, string) {
	t.Helper()
	c, cwd, _ := setupService(t, d, func(s *Service) { s.Agents = agents })
	return c, cwd
}

// setupService is setup with the Service as configure leaves it.
func setupService(t testing.TB, d *daemonSide, configure func(*Service)) (*rpc.Conn, string, *Service) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := fsroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	svc := &Service{Root: root}
	configure(svc)
	if _, bench := t.(*testing.B); bench {
		svc.Log = slog.New(slog.DiscardHandler) // keep the numbers readable
	}
	em := rpc.NewMux()
	svc.Register(em)
	t.Cleanup(func() { svc.Close(); root.Close() }) // after the pair's end
	_, dm := rpctest.Pair(t, em, d.mux(), rpc.Options{}, rpc.Options{})
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "work"))
	return dm, real, svc
}

func prompt(id, text string) map[string]any {
	return map[string]any{"session_token": "tok", "session_id": "s1", "task_id": id, "agentic_tool": "fake",
		"prompt": text, "cwd": "work", "permission_mode": "default", "timeout_ms": 10000}
}

func TestExecutePrompt(t *testing.T) {
	d := &daemonSide{key: "k-123", approve: true}
	c, cwd := setup(t, d)
	var res protocol.ExecutePromptResult
	if err := c.Call(context.Background(), "execute_prompt", prompt("t1", "hello, ask"), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Usage != (agent.Usage{InputTokens: 11, OutputTokens: 7, CacheReadTokens: 3, CacheWriteTokens: 2}) || res.AgentSessionID != "agent-t1" {
		t.Fatalf("result %+v", res)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var types []string
	for i, ev := range d.events {
		if ev.Sequence != int64(i) || ev.TaskID != "t1" || ev.SessionToken != "tok" {
			t.Errorf("event %d: %+v", i, ev)
		}
		types = append(types, ev.EventType)
	}
	if want := []string{"message_start", "text_delta", "permission_decided"}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if got := d.events[1].Event.Data["text"]; got != "cwd="+cwd+" resume= key=k-123" {
		t.Errorf("the adapter saw %q", got)
	}
	if d.events[2].Event.Data["approved"] != true {
		t.Errorf("permission: %+v", d.events[2])
	}
}

// The second turn of a session resumes the agent session of the first.
func TestExecutePromptResumes(t *testing.T) {
	d := &daemonSide{key: "k"}
	c, _ := setup(t, d)
	var res protocol.ExecutePromptResult
	for _, id := range []string{"t1", "t2"} {
		if err := c.Call(context.Background(), "execute_prompt", prompt(id, "hi"), &res); err != nil {
			t.Fatal(err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	last := d.events[len(d.events)-1].Event.Data["text"].(string)
	if !strings.Contains(last, "resume=agent-t1 ") {
		t.Fatalf("second turn: %q", last)
	}
}

func TestExecutePromptEnds(t *testing.T) {
	d := &daemonSide{key: "k"}
	c, _ := setup(t, d)
	ctx := context.Background()

	p := prompt("slow", "hang")
	p["timeout_ms"] = 200
	var res protocol.ExecutePromptResult
	if err := c.Call(ctx, protocol.MethodExecutePrompt, p, &res); err != nil || res.Status != "timeout" {
		t.Fatalf("timeout: %+v %v", res, err)
	}

	done := make(chan protocol.ExecutePromptResult, 1)
	go func() {
		var r protocol.ExecutePromptResult
		_ = c.Call(ctx, protocol.MethodExecutePrompt, prompt("stopme", "hang"), &r)
		done <- r
	}()
	for {
		var sr protocol.StopTaskResult
		err := c.Call(ctx, protocol.MethodStopTask, map[string]string{"task_id": "stopme", "reason": "user"}, &sr)
		if err == nil {
			break
		}
		if !rpc.IsCode(err, protocol.CodeTaskNotFound) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := <-done; r.Status != "cancelled" || !strings.Contains(r.Error.Message, "stopped by stop_task: user") {
		t.Fatalf("stopped: %+v", r)
	}
}

func TestExecutePromptRefusals(t *testing.T) {
	d := &daemonSide{}
	c, _ := setup(t, d)
	ctx := context.Background()
	var res protocol.ExecutePromptResult
	if err := c.Call(ctx, protocol.MethodExecutePrompt, prompt("nokey", "hi"), &res); err != nil || res.Status != "failed" || res.Error.Code != protocol.TaskCredentialMissing {
		t.Fatalf("no key: %+v %v", res, err)
	}
	for _, tc := range []struct {
		field string
		value any
		code  int
	}{
		{"agentic_tool", "nonesuch", rpc.CodeInvalidParams},
		{"cwd", "../..", protocol.CodePermissionDenied},
		{"cwd", "missing", protocol.CodeNotFound},
		{"permission_mode", "yolo", rpc.CodeInvalidParams},
		{"prompt", "", rpc.CodeInvalidParams},
	} {
		p := prompt("r", "hi")
		p[tc.field] = tc.value
		if err := c.Call(ctx, protocol.MethodExecutePrompt, p, nil); !rpc.IsCode(err, tc.code) {
			t.Errorf("%s=%v: %v, want code %d", tc.field, tc.value, err, tc.code)
		}
	}
	if err := c.Call(ctx, protocol.MethodStopTask, map[string]string{"task_id": "none"}, nil); !rpc.IsCode(err, protocol.CodeTaskNotFound) {
		t.Errorf("stop of no task: %v", err)
	}
}
