package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func askPermission(ctx context.Context, c *rpc.Conn, tok, task string) (Decision, error) {
	var d Decision
	err := c.Call(ctx, protocol.MethodRequestPermission, map[string]any{
		"session_token": tok, "task_id": task, "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"},
	}, &d)
	return d, err
}

// nextAsked waits for the next request to enter the queue.
func nextAsked(t *testing.T, sub *PermissionFeed) PermissionRequest {
	t.Helper()
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("subscription closed")
			}
			if !ev.Resolved {
				return ev.Request
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no permission request arrived")
		}
	}
}

func TestRequestPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mode   Mode
		answer func(t *testing.T, b *Broker, req PermissionRequest)
		want   Decision
	}{
		{name: "approved by a person", mode: ModeDefault, want: Decision{Approved: true, Reason: "ok", Scope: "session"},
			answer: func(t *testing.T, b *Broker, req PermissionRequest) { must(t, b.Decide(req.ID, true, "ok", "session")) }},
		{name: "denied by a person", mode: ModeAcceptEdits, want: Decision{Reason: "no"},
			answer: func(t *testing.T, b *Broker, req PermissionRequest) { must(t, b.Decide(req.ID, false, "no", "")) }},
		{name: "timeout", mode: ModePlan, want: Decision{Reason: "timeout"}},
		{name: "task ended", mode: ModeDefault, want: Decision{Reason: "task_ended"},
			answer: func(_ *testing.T, b *Broker, req PermissionRequest) { b.EndTask(req.Task) }},
		{name: "bypass", mode: ModeBypass, want: Decision{Approved: true, Reason: "bypass_permissions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timeout := 50 * time.Millisecond // only the "timeout" case waits it out
			if tt.answer != nil {
				timeout = time.Minute
			}
			e := newEnv(t, envOpts{limits: Limits{PermissionTimeout: timeout}})
			sub := e.b.Subscribe(16)
			defer sub.Close()
			tok := e.start(t, "alice", "t1", tt.mode)
			type result struct {
				d   Decision
				err error
			}
			done := make(chan result, 1)
			go func() {
				d, err := askPermission(context.Background(), e.executor(t, "alice"), tok, "t1")
				done <- result{d, err}
			}()
			if tt.answer != nil {
				req := nextAsked(t, sub)
				if req.User != "alice" || req.Task != "t1" || req.Session != "s-t1" || req.ToolName != "Bash" || string(req.ToolInput) != `{"command":"ls"}` {
					t.Errorf("pending request = %+v", req)
				}
				if got := e.b.Pending(); len(got) != 1 || got[0].ID != req.ID {
					t.Errorf("Pending() = %+v", got)
				}
				tt.answer(t, e.b, req)
			}
			r := <-done
			must(t, r.err)
			if diff := cmp.Diff(tt.want, r.d); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if n := len(e.b.Pending()); n != 0 {
				t.Errorf("%d requests still pending", n)
			}
			recs := e.audit.Query(audit.Filter{Action: audit.PermissionDecided})
			if len(recs) != 1 || recs[0].Reason != tt.want.Reason || recs[0].Tool != "Bash" {
				t.Errorf("audit = %+v", recs)
			}
		})
	}
}

func TestRequestPermissionRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tok := e.start(t, "alice", "t1", ModeBypass)
	bobTok := e.start(t, "bob", "t2", ModeBypass)
	alice := e.executor(t, "alice")
	ctx := context.Background()
	_, err := askPermission(ctx, alice, tok, "t2")
	wantRPC(t, err, protocol.CodeTokenInvalid, "token_mismatch") // token of another task
	_, err = askPermission(ctx, alice, bobTok, "t2")
	wantRPC(t, err, protocol.CodeTokenInvalid, "token_mismatch") // token of another user
	err = alice.Call(ctx, protocol.MethodRequestPermission, map[string]any{"session_token": tok, "task_id": "t1"}, nil)
	wantRPC(t, err, rpc.CodeInvalidParams, "invalid_params")
}

func TestRequestPermissionCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	sub := e.b.Subscribe(16)
	defer sub.Close()
	tok := e.start(t, "alice", "t1", ModeDefault)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := askPermission(ctx, e.executor(t, "alice"), tok, "t1")
		done <- err
	}()
	req := nextAsked(t, sub)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	waitFor(t, "pending entry removed", func() bool { return len(e.b.Pending()) == 0 })
	if err := e.b.Decide(req.ID, true, "", ""); !errors.Is(err, ErrNotPending) {
		t.Errorf("Decide after cancel: %v, want ErrNotPending", err)
	}
}

func TestPendingLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{limits: Limits{MaxPending: 2}})
	sub := e.b.Subscribe(16)
	defer sub.Close()
	tok := e.start(t, "alice", "t1", ModeDefault)
	alice := e.executor(t, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := askPermission(ctx, alice, tok, "t1"); errs <- err }()
		nextAsked(t, sub)
	}
	_, err := askPermission(ctx, alice, tok, "t1")
	wantRPC(t, err, rpc.CodeLimitReached, "too_many_pending")
	cancel()
	for range 2 {
		<-errs
	}
}

func TestStartTaskValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	if _, err := e.b.StartTask(tokenBinding("alice", "t1"), "yolo", ""); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := e.b.StartTask(tokenBinding("", "t1"), ModeDefault, ""); err == nil {
		t.Error("StartTask without a user succeeded")
	}
}
