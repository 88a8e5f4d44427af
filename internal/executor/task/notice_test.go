package task

import (
	"context"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// A task_notice during a turn becomes a notice event in the turn's own
// numbered stream; for a task not running here it is not emitted.
func TestTaskNotice(t *testing.T) {
	d := &daemonSide{key: "k", approve: true}
	c, _, _ := setupService(t, d, func(*Service) {})
	p := prompt("t-notice", "go")
	p["agentic_tool"] = "gated"
	done := make(chan struct{})
	go func() { _ = c.Call(context.Background(), protocol.MethodExecutePrompt, p, nil); close(done) }()
	d.waitEvents(t, 1)
	var res protocol.TaskNoticeResult
	n := protocol.TaskNoticeParams{TaskID: "t-notice", Code: protocol.NoticeBudget, Message: "agor: 80% of the daily budget"}
	if err := c.Call(context.Background(), protocol.MethodTaskNotice, n, &res); err != nil || !res.Emitted {
		t.Fatalf("task_notice = %+v, %v", res, err)
	}
	evs := d.waitEvents(t, 2)
	if evs[1].EventType != protocol.EventNotice || evs[1].Sequence != 1 || evs[1].Event.Data["message"] != n.Message {
		t.Fatalf("event after the notice: %+v", evs[1])
	}
	close(gate("t-notice"))
	<-done
	n.TaskID = "t-none"
	if err := c.Call(context.Background(), protocol.MethodTaskNotice, n, &res); err != nil || res.Emitted {
		t.Fatalf("task_notice for no task = %+v, %v", res, err)
	}
}
