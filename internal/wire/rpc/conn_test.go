package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCallBothWays(t *testing.T) {
	t.Parallel()
	a, b := pair(t, testMux(), testMux(), Options{}, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		c    *Conn
	}{{"a calls b", a}, {"b calls a", b}} {
		var got map[string]string
		if err := tc.c.Call(ctx, "echo", map[string]string{"hello": tc.name}, &got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(map[string]string{"hello": tc.name}, got); diff != "" {
			t.Errorf("%s: echo mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A handler on one side may call back over the same connection while the
// other side's call is still pending: both directions at once.
func TestNestedCallback(t *testing.T) {
	t.Parallel()
	server := testMux()
	server.Register("ask", func(ctx context.Context, r *Request) (any, error) {
		var n int
		err := r.Conn.Call(ctx, "typed", map[string]int{"n": 21}, &n)
		return n, err
	})
	a, _ := pair(t, testMux(), server, Options{}, Options{})
	var got int
	if err := a.Call(context.Background(), "ask", nil, &got); err != nil || got != 42 {
		t.Fatalf("ask = %d, %v; want 42", got, err)
	}
}

func TestNotificationsInOrder(t *testing.T) {
	t.Parallel()
	const n = 20000
	var got []int
	done := make(chan struct{})
	recv := NewMux()
	recv.Register("event", func(_ context.Context, r *Request) (any, error) {
		var p struct{ Seq int }
		_ = json.Unmarshal(r.Params, &p)
		got = append(got, p.Seq) // handlers of notifications never overlap
		if p.Seq == n-1 {
			close(done)
		}
		return nil, nil
	})
	a, _ := pair(t, nil, recv, Options{}, Options{})
	for i := range n {
		if err := a.Notify("event", map[string]int{"seq": i}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("got %d of %d notifications", len(got), n)
	}
	for i, s := range got {
		if s != i {
			t.Fatalf("notification %d has seq %d: out of order", i, s)
		}
	}
}

// A call's result must not overtake notifications sent before it.
func TestResultAfterItsEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen int
	client := NewMux()
	client.Register("event", func(context.Context, *Request) (any, error) {
		time.Sleep(100 * time.Microsecond) // a slow sink
		mu.Lock()
		seen++
		mu.Unlock()
		return nil, nil
	})
	server := NewMux()
	server.Register("run", func(_ context.Context, r *Request) (any, error) {
		for range 200 {
			if err := r.Conn.Notify("event", nil); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	a, _ := pair(t, client, server, Options{}, Options{})
	if err := a.Call(context.Background(), "run", nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != 200 {
		t.Fatalf("result arrived after %d of 200 events", seen)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	a, _ := pair(t, nil, testMux(), Options{}, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 64*50)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				want := fmt.Sprintf("g%d-%d", g, i)
				var got string
				if err := a.Call(context.Background(), "echo", want, &got); err != nil || got != want {
					errs <- fmt.Errorf("echo %s = %q, %v", want, got, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCancelRequest(t *testing.T) {
	t.Parallel()
	cancelled := make(chan error, 1)
	server := testMux()
	server.Register("wait", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	a, b := pair(t, nil, server, Options{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := a.Call(ctx, "wait", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want deadline exceeded", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler was not cancelled by $/cancelRequest")
	}
	waitFor(t, func() bool { return b.InFlight() == 0 })
	a.mu.Lock()
	left := len(a.pending)
	a.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d pending calls left after cancel", left)
	}
}

func TestCloseFailsPendingCalls(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"caller closes", "peer closes"} {
		t.Run(side, func(t *testing.T) {
			a, b := pair(t, nil, testMux(), Options{}, Options{})
			errc := make(chan error, 3)
			for range 3 {
				go func() { errc <- a.Call(context.Background(), "block", nil, nil) }()
			}
			waitFor(t, func() bool { return b.InFlight() == 3 })
			if side == "caller closes" {
				a.Close()
			} else {
				b.Close()
			}
			for range 3 {
				select {
				case err := <-errc:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("pending call = %v, want ErrClosed", err)
					}
				case <-time.After(time.Second):
					t.Fatal("pending call not failed within 1s of close")
				}
			}
			if err := a.Call(context.Background(), "echo", nil, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("call after close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	w := newWire(t, testMux(), Options{})
	tests := []struct {
		name, line string
		id         string
		code       int
		field      string
	}{
		{"parse error", `{"jsonrpc":"2.0","id":1,`, "null", CodeParseError, ""},
		{"not json at all", `hello`, "null", CodeParseError, ""},
		{"no method", `{"jsonrpc":"2.0","id":1}`, "1", CodeInvalidRequest, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":2,"method":"echo"}`, "2", CodeInvalidRequest, ""},
		{"method not a string", `{"jsonrpc":"2.0","id":3,"method":7}`, "3", CodeInvalidRequest, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"echo"}`, "null", CodeInvalidRequest, ""},
		{"not an object", `42`, "null", CodeInvalidRequest, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":"s","method":"nope"}`, `"s"`, CodeMethodNotFound, ""},
		{"bad param type", `{"jsonrpc":"2.0","id":5,"method":"typed","params":{"n":"x"}}`, "5", CodeInvalidParams, "n"},
		{"params not object", `{"jsonrpc":"2.0","id":6,"method":"typed","params":[1]}`, "6", CodeInvalidParams, "params"},
		{"validation", `{"jsonrpc":"2.0","id":7,"method":"typed","params":{"n":-1}}`, "7", CodeInvalidParams, "n"},
		{"handler error", `{"jsonrpc":"2.0","id":8,"method":"fail"}`, "8", CodeInternalError, ""},
		{"application error", `{"jsonrpc":"2.0","id":9,"method":"missing"}`, "9", testAppCode, ""},
		{"handler panic", `{"jsonrpc":"2.0","id":10,"method":"panic"}`, "10", CodeInternalError, ""},
		{"empty batch", `[]`, "null", CodeInvalidRequest, ""},
	}
	for _, tc := range tests {
		w.send(tc.line)
		m := w.recvMsg()
		if m.Error == nil {
			t.Errorf("%s: no error in reply (result %s)", tc.name, m.Result)
			continue
		}
		if string(m.ID) != tc.id || m.Error.Code != tc.code {
			t.Errorf("%s: id %s code %d; want id %s code %d (%s)", tc.name, m.ID, m.Error.Code, tc.id, tc.code, m.Error.Message)
		}
		if f, _ := m.Error.Data["field"].(string); f != tc.field {
			t.Errorf("%s: data.field = %q, want %q", tc.name, f, tc.field)
		}
		if m.Error.Data["reason"] == nil {
			t.Errorf("%s: no data.reason", tc.name)
		}
	}
	// The connection survived all of it.
	w.send(`{"jsonrpc":"2.0","id":11,"method":"typed","params":{"n":4}}`)
	if m := w.recvMsg(); string(m.Result) != "8" {
		t.Fatalf("after errors: result %s, want 8", m.Result)
	}
}

func TestBatch(t *testing.T) {
	t.Parallel()
	w := newWire(t, testMux(), Options{})
	w.send(`[{"jsonrpc":"2.0","id":1,"method":"typed","params":{"n":1}},` +
		`{"jsonrpc":"2.0","method":"echo"},` +
		`{"jsonrpc":"2.0","id":2,"method":"nope"},` +
		`1,` +
		`{"jsonrpc":"2.0","id":3,"method":"typed","params":{"n":3}}]`)
	var replies []message
	if err := json.Unmarshal(w.recv(), &replies); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range replies {
		if r.Error != nil {
			got[string(r.ID)] = fmt.Sprint(r.Error.Code)
		} else {
			got[string(r.ID)] = string(r.Result)
		}
	}
	want := map[string]string{"1": "2", "2": fmt.Sprint(CodeMethodNotFound), "null": fmt.Sprint(CodeInvalidRequest), "3": "6"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("batch replies (-want +got):\n%s", diff)
	}
	// A batch of notifications only gets no reply at all: the next line
	// read is the answer to the following request.
	w.send(`[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo"}]`)
	w.send(`{"jsonrpc":"2.0","id":4,"method":"typed","params":{"n":2}}`)
	if m := w.recvMsg(); string(m.ID) != "4" {
		t.Fatalf("after notification batch got reply id %s, want 4", m.ID)
	}
}

func TestOverLongLine(t *testing.T) {
	t.Parallel()
	const limit = 4096
	w := newWire(t, testMux(), Options{MaxLine: limit})
	big := strings.Repeat("x", 3*limit)

	w.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"data":"` + big + `"}}`)
	m := w.recvMsg()
	if string(m.ID) != "1" || m.Error == nil || m.Error.Code != CodeLimitReached || m.Error.Reason() != "message_too_large" {
		t.Fatalf("over-long request: got %+v", m)
	}
	// An over-long notification is dropped; one with no recognisable start
	// gets an error with id null.
	w.send(`{"jsonrpc":"2.0","method":"echo","params":{"data":"` + big + `"}}`)
	w.send(`"` + big + `"`)
	if m := w.recvMsg(); string(m.ID) != "null" || m.Error.Code != CodeLimitReached {
		t.Fatalf("over-long garbage: got %+v", m)
	}
	// The connection keeps working, with a line right at the limit.
	head := `{"jsonrpc":"2.0","id":2,"method":"echo","params":"`
	fit := head + strings.Repeat("y", limit-len(head)-2) + `"}`
	w.send(fit)
	if m := w.recvMsg(); string(m.ID) != "2" || m.Error != nil {
		t.Fatalf("line at the limit: got error %+v", m.Error)
	}
}

// A response too long for the caller fails that call, not the connection.
func TestOverLongResponse(t *testing.T) {
	t.Parallel()
	a, _ := pair(t, nil, testMux(), Options{MaxLine: 1024}, Options{})
	if err := a.Call(context.Background(), "echo", strings.Repeat("z", 900), nil); err != nil {
		t.Fatalf("short call: %v", err)
	}
	big := testMux()
	big.Register("big", func(context.Context, *Request) (any, error) { return strings.Repeat("b", 5000), nil })
	caller, _ := pair(t, nil, big, Options{MaxLine: 1024}, Options{})
	for i := range 2 {
		if err := caller.Call(context.Background(), "big", nil, nil); !IsCode(err, CodeLimitReached) {
			t.Fatalf("over-long response %d: %v, want limit error", i, err)
		}
	}
	if err := caller.Call(context.Background(), "echo", "small", nil); err != nil {
		t.Fatalf("call after over-long responses: %v", err)
	}
}

func TestSendTooLarge(t *testing.T) {
	t.Parallel()
	a, _ := pair(t, nil, testMux(), Options{MaxLine: 256}, Options{})
	err := a.Notify("echo", strings.Repeat("n", 300))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Notify = %v, want ErrTooLarge", err)
	}
	if err := a.Call(context.Background(), "echo", strings.Repeat("c", 300), nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Call = %v, want ErrTooLarge", err)
	}
	if err := a.Call(context.Background(), "echo", "ok", nil); err != nil {
		t.Fatalf("small call after refusals: %v", err)
	}
}

func TestInFlightLimit(t *testing.T) {
	t.Parallel()
	a, b := pair(t, nil, testMux(), Options{}, Options{MaxInFlight: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- a.Call(ctx, "block", nil, nil) }()
	}
	waitFor(t, func() bool { return b.InFlight() == 2 })
	err := a.Call(context.Background(), "echo", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeLimitReached || e.Reason() != "too_many_requests" {
		t.Fatalf("third call = %v, want limit reached", err)
	}
	cancel()
	for range 2 {
		<-errc
	}
	waitFor(t, func() bool { return b.InFlight() == 0 })
	if err := a.Call(context.Background(), "echo", nil, nil); err != nil {
		t.Fatalf("call after the others ended: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// An inline method is served on the read loop, in order with the rest.
func TestInlineMethod(t *testing.T) {
	t.Parallel()
	server := testMux()
	server.RegisterInline("fast", Method(func(_ context.Context, p typedParams) (int, error) { return p.N + 1, nil }))
	if !server.Inline("fast") || server.Inline("echo") {
		t.Fatal("Inline does not reflect RegisterInline")
	}
	a, _ := pair(t, nil, server, Options{}, Options{})
	for i := range 100 {
		var got int
		if err := a.Call(context.Background(), "fast", map[string]int{"n": i}, &got); err != nil || got != i+1 {
			t.Fatalf("fast(%d) = %d, %v", i, got, err)
		}
	}
	server.Register("fast", func(context.Context, *Request) (any, error) { return "slow path", nil })
	if server.Inline("fast") {
		t.Fatal("re-registering with Register kept the method inline")
	}
}

// Raw params and results are re-framed: indentation with newlines must
// not split a message, and invalid raw JSON is refused before sending.
func TestRawJSONIsFramed(t *testing.T) {
	t.Parallel()
	server := testMux()
	server.Register("indented", func(context.Context, *Request) (any, error) {
		return json.RawMessage("{\n  \"a\": 1\n}"), nil
	})
	a, _ := pair(t, nil, server, Options{}, Options{})
	var got map[string]int
	if err := a.Call(context.Background(), "echo", json.RawMessage("{\n \"a\":\n 2}"), &got); err != nil || got["a"] != 2 {
		t.Fatalf("echo of indented params = %v, %v", got, err)
	}
	if err := a.Call(context.Background(), "indented", nil, &got); err != nil || got["a"] != 1 {
		t.Fatalf("indented result = %v, %v", got, err)
	}
	if err := a.Notify("echo", json.RawMessage("{bad")); err == nil {
		t.Fatal("invalid raw params were sent")
	}
}
