package rpc

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Callers on several goroutines while the peer streams notifications:
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
	var smu sync.Mutex
	sent := 0
	server := NewMux()
	server.Register("run", func(_ context.Context, r *Request) (any, error) {
		smu.Lock() // so that the count returned covers every event sent
		defer smu.Unlock()
		for range 20 {
			if err := r.Conn.Notify("event", nil); err != nil {
				return nil, err
			}
			sent++
		}
		return sent, nil
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
				if s < n {
					errc <- fmt.Errorf("result %d overtook its events (%d seen)", n, s)
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

// A reply the read loop wrote and left for its next flush goes out before
// a notification handler after it runs, however long that one takes.
func TestDeferredReplyNotHeldBySlowHandler(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	mux := testMux()
	mux.RegisterInline("fast", func(context.Context, *Request) (any, error) { return "ok", nil })
	mux.Register("slow", func(context.Context, *Request) (any, error) {
		<-release
		return nil, nil
	})
	w := newWire(t, mux, Options{})
	defer close(release)
	// One write, so the notification is buffered when the reply is made.
	w.send(`{"jsonrpc":"2.0","id":1,"method":"fast"}` + "\n" + `{"jsonrpc":"2.0","method":"slow"}`)
	if m := w.recvMsg(); string(m.ID) != "1" || string(m.Result) != `"ok"` {
		t.Fatalf("reply: %+v", m)
	}
}
