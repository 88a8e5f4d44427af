package rpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// warm makes a call, after which a's loop gives the reader role up, so the
// next call reads its own response (the path role.go describes).
func warm(t *testing.T, a *Conn) {
	t.Helper()
	for range 3 {
		if err := a.Call(context.Background(), "echo", "warm", nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCallerReadsManyCalls(t *testing.T) {
	t.Parallel()
	a, _ := pair(t, nil, testMux(), Options{}, Options{})
	for i := range 2000 {
		var got int
		if err := a.Call(context.Background(), "echo", i, &got); err != nil || got != i {
			t.Fatalf("call %d = %d, %v", i, got, err)
		}
		if i%500 == 0 {
			time.Sleep(2 * handBackAfter) // the loop takes the role back between
		}
	}
}

// A caller reading its own response is still cancelled by its context,
// and the connection stays usable.
func TestCallerReadsCancel(t *testing.T) {
	t.Parallel()
	cancelled := make(chan error, 1)
	server := testMux()
	server.Register("wait", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	a, _ := pair(t, nil, server, Options{}, Options{})
	for range 5 {
		warm(t, a)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := a.Call(ctx, "wait", nil, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call = %v, want deadline exceeded", err)
		}
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("handler was not cancelled by $/cancelRequest")
		}
	}
	var got string
	if err := a.Call(context.Background(), "echo", "after", &got); err != nil || got != "after" {
		t.Fatalf("call after cancellations = %q, %v", got, err)
	}
}

// The peer's notifications and requests are read while no call is made,
// after the loop gave the role up.
func TestPeerMessagesAfterCalls(t *testing.T) {
	t.Parallel()
	var events atomic.Int64
	client := testMux()
	client.Register("event", func(context.Context, *Request) (any, error) {
		events.Add(1)
		return nil, nil
	})
	a, b := pair(t, client, testMux(), Options{}, Options{})
	for round := range 20 {
		warm(t, a)
		if err := b.Notify("event", nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var got int
		err := b.Call(ctx, "echo", round, &got)
		cancel()
		if err != nil || got != round {
			t.Fatalf("peer's call = %d, %v", got, err)
		}
		waitFor(t, func() bool { return events.Load() == int64(round+1) })
	}
}

// Callers reading for each other while the peer streams notifications:
// every call gets its own result, after the events sent before it.
func TestCallersAndEventsInterleaved(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := 0
	client := NewMux()
	client.Register("event", func(context.Context, *Request) (any, error) {
		mu.Lock()
		seen++
		mu.Unlock()
		return nil, nil
	})
	var sent atomic.Int64
	server := NewMux()
	server.Register("run", func(_ context.Context, r *Request) (any, error) {
		for range 20 {
			if err := r.Conn.Notify("event", nil); err != nil {
				return nil, err
			}
			sent.Add(1)
		}
		return sent.Load(), nil
	})
	a, _ := pair(t, client, server, Options{}, Options{})
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				var n int
				if err := a.Call(context.Background(), "run", nil, &n); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				s := seen
				mu.Unlock()
				if s < n { // every event counted in n was written before the result
					errc <- errors.New("result overtook its events")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// Close ends a call whose caller is blocked reading for its response.
func TestCloseWhileCallerReads(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"caller closes", "peer closes"} {
		t.Run(side, func(t *testing.T) {
			a, b := pair(t, nil, testMux(), Options{}, Options{})
			warm(t, a)
			errc := make(chan error, 1)
			go func() { errc <- a.Call(context.Background(), "block", nil, nil) }()
			waitFor(t, func() bool { return b.InFlight() == 1 })
			if side == "caller closes" {
				a.Close()
			} else {
				b.Close()
			}
			select {
			case err := <-errc:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("call = %v, want ErrClosed", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("call not failed within 2s of close")
			}
		})
	}
}
