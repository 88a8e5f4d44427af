package executorunit

import (
	"context"
	"os"
	"sync"
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

// TestDirectEndBeforeNextStart: stopping an executor and starting the
// next at once tells the end before the new start, every time; out of
// order, the daemon took the new executor for gone (no audit of its
// start, no pre-warm at it).
func TestDirectEndBeforeNextStart(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the direct backend runs executors as the target user: needs root")
	}
	name, _ := target(t)
	d, _ := direct(t, 0)
	var mu sync.Mutex
	var states []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = d.Watch(ctx, func(ev UnitChange) { mu.Lock(); states = append(states, ev.State); mu.Unlock() })
	}()
	for range 50 {
		if _, err := d.Ensure(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		if err := d.Stop(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Ensure(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the watcher's goroutine has them all
	mu.Lock()
	defer mu.Unlock()
	for i, s := range states {
		if want := map[bool]string{true: "active", false: "inactive"}[i%2 == 0]; s != want && !(i%2 == 1 && s == "failed") {
			t.Fatalf("changes %v: #%d is %s, want %s", states, i, s, want)
		}
	}
	if len(states) != 101 {
		t.Fatalf("changes %v, want 101", states)
	}
}
