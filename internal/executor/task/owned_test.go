package task

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"
)

// gatedAgent emits one event, waits for its task's gate, then emits two
// more, asks a permission and says what was decided: a turn that goes on
// while no daemon is connected.
type gatedAgent struct{}

var gates sync.Map // task id → chan struct{}

func gate(task string) chan struct{} {
	g, _ := gates.LoadOrStore(task, make(chan struct{}))
	return g.(chan struct{})
}

func (gatedAgent) CredentialKey() string { return "FAKE_API_KEY" }

func (gatedAgent) Run(ctx context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	h.Emit(agent.Event{Type: protocol.EventMessageStart, Data: map[string]any{"role": "assistant"}})
	select {
	case <-gate(req.TaskID):
	case <-ctx.Done():
		return agent.Result{}, ctx.Err()
	}
	h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": "while away 1"}})
	h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": "while away 2"}})
	d := h.Ask(ctx, "Bash", json.RawMessage(`{"command":"touch x"}`))
	h.Emit(agent.Event{Type: protocol.EventPermissionDecided, Data: map[string]any{"approved": d.Approved, "reason": d.Reason}})
	return agent.Result{Status: "completed", MessageCount: 4}, nil
}

func init() { agent.Register("gated", gatedAgent{}) }

// reconnect joins svc to a new daemon side, as a restarted daemon's
// connection to the same executor.
func reconnect(t *testing.T, svc *Service, d *daemonSide) *rpc.Conn {
	em := rpc.NewMux()
	svc.Register(em)
	_, dm := rpctest.Pair(t, em, d.mux(), rpc.Options{}, rpc.Options{})
	return dm
}

func (d *daemonSide) waitEvents(t *testing.T, n int) []message {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		d.mu.Lock()
		evs := append([]message(nil), d.events...)
		d.mu.Unlock()
		if len(evs) >= n {
			return evs
		}
	}
	t.Fatalf("fewer than %d events reached the daemon", n)
	return nil
}

// TestTaskOutlivesDaemon: the daemon's connection goes mid-turn; the
// agent works on, and a new connection's resume_task gets the events the
// first one missed, exactly once and in order, under the new token, then
// the permission question asked while no daemon was there, then the
// result. Before, the task was cancelled with its connection.
func TestTaskOutlivesDaemon(t *testing.T) {
	first := &daemonSide{key: "k"}
	c1, _, svc := setupService(t, first, func(*Service) {})
	p := prompt("t1", "go")
	p["agentic_tool"] = "gated"
	go func() { _ = c1.Call(context.Background(), protocol.MethodExecutePrompt, p, nil) }()
	first.waitEvents(t, 1)
	c1.Close() // the daemon is gone
	<-c1.Done()
	close(gate("t1"))
	time.Sleep(50 * time.Millisecond) // the agent emits with no daemon, then waits for its question

	second := &daemonSide{approve: true}
	c2 := reconnect(t, svc, second)
	var res protocol.ExecutePromptResult
	err := c2.Call(context.Background(), protocol.MethodResumeTask, protocol.ResumeTaskParams{TaskID: "t1", SessionToken: "tok2", AfterSequence: 0}, &res)
	if err != nil || res.Status != "completed" || res.MessageCount != 4 {
		t.Fatalf("resume_task = %+v, %v; want completed", res, err)
	}
	evs := second.waitEvents(t, 3)
	want := []string{"while away 1", "while away 2", ""}
	for i, ev := range evs {
		if ev.Sequence != int64(i+1) || ev.SessionToken != "tok2" || (want[i] != "" && ev.Event.Data["text"] != want[i]) {
			t.Errorf("event %d after the resume: seq %d token %q %v", i, ev.Sequence, ev.SessionToken, ev.Event.Data)
		}
	}
	if len(evs) != 3 || evs[2].EventType != protocol.EventPermissionDecided || evs[2].Event.Data["approved"] != true {
		t.Fatalf("events after the resume: %+v; want 3, the last an approval asked of the new daemon", evs)
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	if len(first.events) != 1 {
		t.Errorf("the first daemon got %d events, want 1", len(first.events))
	}
}

// TestResumeReplaysAll: after_sequence -1 sends every kept event again;
// the question open when the daemon went is answered by the next; a task
// the executor does not know is task_not_found.
func TestResumeReplaysAll(t *testing.T) {
	first := &daemonSide{key: "k", approve: true}
	c1, _, svc := setupService(t, first, func(*Service) {})
	p := prompt("t2", "go")
	p["agentic_tool"] = "gated"
	go func() { _ = c1.Call(context.Background(), protocol.MethodExecutePrompt, p, nil) }()
	first.waitEvents(t, 1)
	c1.Close()
	<-c1.Done()
	close(gate("t2"))

	second := &daemonSide{approve: false}
	c2 := reconnect(t, svc, second)
	ctx := context.Background()
	err := c2.Call(ctx, protocol.MethodResumeTask, protocol.ResumeTaskParams{TaskID: "nope", SessionToken: "t", AfterSequence: -1}, nil)
	if !rpc.IsCode(err, protocol.CodeTaskNotFound) {
		t.Fatalf("resume of an unknown task: %v, want task_not_found", err)
	}
	var res protocol.ExecutePromptResult
	if err := c2.Call(ctx, protocol.MethodResumeTask, protocol.ResumeTaskParams{TaskID: "t2", SessionToken: "tok3", AfterSequence: -1}, &res); err != nil || res.Status != "completed" {
		t.Fatalf("resume_task = %+v, %v", res, err)
	}
	evs := second.waitEvents(t, 4)
	for i, ev := range evs {
		if ev.Sequence != int64(i) {
			t.Errorf("event %d has sequence %d", i, ev.Sequence)
		}
	}
	if evs[3].Event.Data["approved"] != false {
		t.Errorf("the question was answered by %v; want the second daemon's refusal", evs[3].Event.Data)
	}
}

func TestKeptEventsBounded(t *testing.T) {
	var k keptEvents
	big := make([]byte, 1<<20)
	for i := range 20 {
		k.add(protocol.ReportMessage{Sequence: int64(i), EventData: big})
	}
	if k.bytes > keptBytes || len(k.evs) != keptBytes>>20 || k.evs[0].Sequence != 20-keptBytes>>20 {
		t.Fatalf("kept %d events, %d bytes, from %d", len(k.evs), k.bytes, k.evs[0].Sequence)
	}
	if got := k.after(17); len(got) != 2 || got[0].Sequence != 18 {
		t.Fatalf("after 17: %d events", len(got))
	}
}
