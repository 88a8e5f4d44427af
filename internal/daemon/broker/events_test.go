package broker

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func tokenBinding(user, task string) token.Binding {
	return token.Binding{User: user, Session: "s-" + task, Task: task}
}

func report(t *testing.T, c *rpc.Conn, tok, task string, seq int64) {
	t.Helper()
	reportType(t, c, tok, task, seq, protocol.EventTextDelta)
}

func reportType(t *testing.T, c *rpc.Conn, tok, task string, seq int64, typ string) {
	t.Helper()
	must(t, c.Notify(protocol.MethodReportMessage, map[string]any{
		"session_token": tok, "task_id": task, "sequence": seq, "timestamp": 1000 + seq,
		"event_type": typ, "event_data": map[string]any{"n": seq},
	}))
}

func TestReportMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{maxUses: 3}) // events must not spend token uses
	tok := e.start(t, "alice", "t1", ModeDefault)
	bobTok := e.start(t, "bob", "t2", ModeDefault)
	alice := e.executor(t, "alice")
	for _, seq := range []int64{0, 1, 1, 3, 4, 5, 6, 7} { // a duplicate and a gap
		report(t, alice, tok, "t1", seq)
	}
	report(t, alice, bobTok, "t2", 0)                                 // bob's token on alice's executor
	report(t, alice, "forged", "t1", 8)                               // unknown token
	report(t, alice, tok, "t2", 0)                                    // alice's token for another task
	reportType(t, alice, tok, "t1", 9, "text_delta\n\nevent: forged") // a type outside the vocabulary
	waitFor(t, "events handled", func() bool {
		s := e.b.Stats()
		return s.EventsStored+s.EventsDuplicate+s.EventsDropped == 12
	})
	s := e.b.Stats()
	if s.EventsStored != 7 || s.EventsDuplicate != 1 || s.EventsDropped != 4 {
		t.Errorf("stats = %+v", s)
	}
	if diff := cmp.Diff([]events.Range{{From: 2, To: 2}}, e.sink.Missing("t1")); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	var seqs []int64
	for _, ev := range e.mem.Events {
		seqs = append(seqs, ev.Sequence)
		if ev.TaskID != "t1" || ev.Type != protocol.EventTextDelta || !json.Valid(ev.Data) {
			t.Errorf("stored event %+v", ev)
		}
	}
	if diff := cmp.Diff([]int64{0, 1, 3, 4, 5, 6, 7}, seqs); diff != "" {
		t.Errorf("stored sequences (-want +got):\n%s", diff)
	}
	// The token is still usable: the event stream did not use it up.
	_, err := getKey(context.Background(), alice, tok, "ANTHROPIC_API_KEY")
	wantRPC(t, err, 0, "")

	if got := e.b.EndTask("t1"); len(got) != 1 {
		t.Errorf("EndTask missing = %v", got)
	}
	report(t, alice, tok, "t1", 8) // after the task ended
	waitFor(t, "late event dropped", func() bool { return e.b.Stats().EventsDropped == 5 })

	must(t, e.audit.Flush())
	total := 0
	for _, r := range e.audit.Query(audit.Filter{Action: audit.EventRefused, User: "alice"}) {
		total += r.Count
	}
	if total != 5 {
		t.Errorf("audit counts %d refused events, want 5", total)
	}
}
