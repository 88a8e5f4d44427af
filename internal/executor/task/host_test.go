package task

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// bwrapAgent's tool call fails the way codex's did under the executor's
// unit when it asked its own sandbox for workspace-write: bubblewrap could
// not make a namespace, and the turn still ended completed.
type bwrapAgent struct{ fakeAgent }

func (bwrapAgent) Run(_ context.Context, _ agent.Request, h agent.Host) (agent.Result, error) {
	h.Emit(agent.Event{Type: protocol.EventToolCall, Data: map[string]any{"tool_use_id": "c1", "tool_name": "exec_command"}})
	h.Emit(agent.Event{Type: protocol.EventToolResult, Data: map[string]any{"tool_use_id": "c1", "is_error": true,
		"output": "bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces."}})
	return agent.Result{Status: "completed", MessageCount: 1}, nil
}

func init() { agent.Register("fakebwrap", bwrapAgent{}) }

// TestToolSandboxFailureNeverSilent: a tool call whose own sandbox could
// not start is an error event naming the cause and a warning in the
// task's result (agorctl prints it and exits non-zero), not a quiet
// "completed".
func TestToolSandboxFailureNeverSilent(t *testing.T) {
	d := &daemonSide{key: "k", approve: true}
	c, _ := setup(t, d)
	p := prompt("t1", "run it")
	p["agentic_tool"] = "fakebwrap"
	var res protocol.ExecutePromptResult
	if err := c.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "sandbox could not start: bwrap: No permissions") {
		t.Fatalf("result warnings %q", res.Warnings)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	last := d.events[len(d.events)-1]
	if last.EventType != protocol.EventError || last.Event.Data["code"] != protocol.TaskSandbox {
		t.Fatalf("last event %+v, want an error event with code sandbox", last)
	}
}

func TestSandboxFailureLines(t *testing.T) {
	for out, want := range map[string]bool{
		"bwrap: Can't mount proc on /newroot/proc: Operation not permitted": true,
		"line one\nsandbox error: landlock ruleset failed":                  true,
		"touch: cannot touch '/x': Permission denied":                       false, // a sandbox enforcing is no failure to start
		"": false,
	} {
		ev := agent.Event{Type: protocol.EventToolResult, Data: map[string]any{"output": out}}
		if got := sandboxFailure(ev) != ""; got != want {
			t.Errorf("%q: failure %v, want %v", out, got, want)
		}
	}
}

// TestUndoneInResultSandbox: what the guard undid after a turn is in
// the result's sandbox (the daemon audits it as sandbox_undone) and its
// warnings; the warm agent's box it was copied from keeps none.
func TestUndoneInResultSandbox(t *testing.T) {
	h := newHost("t1", nil, "", slog.New(slog.DiscardHandler))
	box := &protocol.SandboxInfo{Level: protocol.SandboxWorkspace, Enforced: true}
	if got := h.sandbox(box); got != box {
		t.Fatalf("nothing undone, yet %+v", got)
	}
	h.noteUndone([]string{"sub/.envrc: project settings (disabled: renamed .envrc.agor-disabled)"})
	got := h.sandbox(box)
	if len(got.Undone) != 1 || !strings.HasPrefix(got.Undone[0], "sub/.envrc: ") || len(box.Undone) != 0 {
		t.Fatalf("result sandbox %+v, box %+v", got, box)
	}
	if w := h.warnings(); len(w) != 1 || !strings.Contains(w[0], "disabled: sub/.envrc") {
		t.Errorf("warnings %q", w)
	}
	if h.sandbox(nil) != nil {
		t.Error("no sandbox became one")
	}
}
