package api

import (
	"context"
	"testing"
	"time"
)

// TestTurns: a person's third output-heavy request waits until one of the
// first two is done; another person's does not wait at all.
func TestTurns(t *testing.T) {
	var tr turns
	ctx := context.Background()
	var held []func()
	for range heavyPerPerson {
		release, err := tr.take(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if release, err := tr.take(ctx, "bob"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := tr.take(short, "alice"); err == nil {
		t.Fatal("alice got a third turn at once")
	}
	got := make(chan struct{})
	go func() {
		release, err := tr.take(ctx, "alice")
		if err == nil {
			release()
		}
		close(got)
	}()
	held[0]()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a released turn was not handed on")
	}
	held[1]()
}
