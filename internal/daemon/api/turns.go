package api

import (
	"context"
	"sync"
)

// heavyPerPerson is how many of one person's output-heavy requests (an
// exec's output, a replay of stored events) the daemon serves at once;
// the rest wait their turn. Each keeps a goroutine encoding and writing
// for as long as its output lasts: 66 of them from one person kept the
// daemon's every thread busy, and everyone else's requests waited behind
// them.
const heavyPerPerson = 2

// turns hands out each person's heavyPerPerson slots.
type turns struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

// take waits for one of person's slots (or ctx) and returns its release.
func (t *turns) take(ctx context.Context, person string) (func(), error) {
	t.mu.Lock()
	if t.slots == nil {
		t.slots = map[string]chan struct{}{}
	}
	c := t.slots[person]
	if c == nil {
		c = make(chan struct{}, heavyPerPerson)
		t.slots[person] = c
	}
	t.mu.Unlock()
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
