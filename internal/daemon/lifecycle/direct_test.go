package lifecycle

import (
	"context"
	"testing"
	"time"
)

// TestEarlyChangesReachFirstWatcher: an executor started before the
// daemon's Watch goroutine registered (the API's first request can win
// that race) still reaches the watcher, so its start is audited.
func TestEarlyChangesReachFirstWatcher(t *testing.T) {
	d := &Direct{}
	d.mu.Lock()
	d.emit(UnitChange{User: "alice", Kind: "service", State: "active", Sub: "running"})
	d.mu.Unlock()
	got := make(chan UnitChange, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Watch(ctx, func(ev UnitChange) { got <- ev }) }()
	select {
	case ev := <-got:
		if ev.User != "alice" || ev.State != "active" {
			t.Fatalf("change %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the change before the watcher was lost")
	}
}
