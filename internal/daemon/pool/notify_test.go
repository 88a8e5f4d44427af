package pool

import (
	"context"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// An executor's notifications are paced per user: past its burst a
// flood waits (here, past its deadline), requests are not held, another
// user's allowance is their own, and a new connection gets no fresh one.
func TestNotificationsPaced(t *testing.T) {
	p := &Pool{NotifyRate: 1, NotifyBurst: 3}
	handled := 0
	next := rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) { handled++; return nil, nil })
	note := &rpc.Request{Method: "terminal_output", Notification: true}
	send := func(h rpc.Handler, r *rpc.Request) error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := h.Handle(ctx, r)
		return err
	}
	alice := p.paced("alice", next)
	for i := range 3 {
		if err := send(alice, note); err != nil {
			t.Fatalf("notification %d within the burst: %v", i, err)
		}
	}
	if err := send(alice, note); err == nil || handled != 3 {
		t.Errorf("notification past the burst: err %v, handled %d; want it held back", err, handled)
	}
	if err := send(alice, &rpc.Request{Method: "get_api_key"}); err != nil {
		t.Errorf("a request was held back: %v", err)
	}
	if err := send(p.paced("bob", next), note); err != nil {
		t.Errorf("bob's notification waited for alice's flood: %v", err)
	}
	if err := send(p.paced("alice", next), note); err == nil {
		t.Error("alice's new connection came with a fresh allowance")
	}
}
