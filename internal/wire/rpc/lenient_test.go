package rpc

import (
	"bytes"
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

// agentPeer is the far end of a lenient Conn: a raw wire, as an agent CLI
// on a pipe would be.
type agentPeer struct {
	*wire
	c     *Conn
	mu    sync.Mutex
	lines []string // what OnLine saw
	notes chan *Request
}

func newAgentPeer(t *testing.T, opts Options) *agentPeer {
	t.Helper()
	p := &agentPeer{notes: make(chan *Request, 16)}
	mux := NewMux()
	mux.Register("session/update", func(_ context.Context, r *Request) (any, error) {
		p.notes <- r
		return nil, nil
	})
	mux.Register("session/request_permission", func(_ context.Context, r *Request) (any, error) {
		return map[string]string{"outcome": "allow", "raw": string(r.Raw)}, nil
	})
	opts.OnLine = func(line []byte) []byte {
		p.mu.Lock()
		p.lines = append(p.lines, string(line))
		p.mu.Unlock()
		if bytes.HasPrefix(line, []byte("#")) {
			return nil // the hook may drop lines
		}
		return bytes.ReplaceAll(line, []byte("sk-secret"), []byte("[redacted]"))
	}
	x, y := socketpair(t)
	p.c = NewConn(x, mux, opts)
	serve(t, p.c)
	t.Cleanup(func() { y.Close() })
	p.wire = &wire{t: t, nc: y, sc: newScanner(y)}
	return p
}

func (p *agentPeer) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func TestLenientPeer(t *testing.T) {
	t.Parallel()
	p := newAgentPeer(t, Options{Lenient: true, Bare: true})

	// Stray output is skipped without a reply; a message without
	// "jsonrpc" is accepted, and its handler sees the line (as rewritten
	// by OnLine) in Request.Raw.
	p.send("Loading model...")
	p.send(`{"level":"info","msg":"not a message"}`)
	p.send("# dropped by the hook")
	update := `{"method":"session/update","params":{"token":"sk-secret"}}`
	p.send(update)
	select {
	case r := <-p.notes:
		want := strings.ReplaceAll(update, "sk-secret", "[redacted]")
		if string(r.Raw) != want || string(r.Params) != `{"token":"[redacted]"}` {
			t.Fatalf("notification Raw %s Params %s; want the redacted line", r.Raw, r.Params)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notification without jsonrpc was not delivered")
	}

	// A request from the peer with a string id: answered with that id, and
	// without "jsonrpc" (Bare).
	p.send(`{"id":"perm-1","method":"session/request_permission","params":{}}`)
	reply := p.recv()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(reply, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["id"]) != `"perm-1"` || m["jsonrpc"] != nil || m["result"] == nil {
		t.Fatalf("reply to the peer's request: %s", reply)
	}

	want := []string{"Loading model...", `{"level":"info","msg":"not a message"}`, "# dropped by the hook", update,
		`{"id":"perm-1","method":"session/request_permission","params":{}}`}
	if diff := cmp.Diff(want, p.seen()); diff != "" {
		t.Fatalf("OnLine saw (-want +got):\n%s", diff)
	}
}

// Our calls to a lenient peer match the peer's echo of the id as the
// number sent, another spelling of it, or a string of it.
func TestLenientCallIDs(t *testing.T) {
	t.Parallel()
	p := newAgentPeer(t, Options{Lenient: true, Bare: true})
	for i, echo := range []func(id string) string{
		func(id string) string { return id },
		func(id string) string { return id + ".0" },
		func(id string) string { return `"` + id + `"` },
	} {
		got := make(chan string, 1)
		errc := make(chan error, 1)
		go func() {
			var res struct{ SessionID string }
			errc <- p.c.Call(context.Background(), "session/new", map[string]string{"cwd": "/"}, &res)
			got <- res.SessionID
		}()
		req := p.recvMsg()
		if req.Method != "session/new" || req.JSONRPC != "" {
			t.Fatalf("request %d: %+v (want no jsonrpc)", i, req)
		}
		p.send(fmt.Sprintf(`{"id":%s,"result":{"sessionId":"s%d"}}`, echo(string(req.ID)), i))
		if err := <-errc; err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if s := <-got; s != fmt.Sprintf("s%d", i) {
			t.Fatalf("call %d decoded %q", i, s)
		}
	}
	// An error response beside a null result, as some peers send it.
	errc := make(chan error, 1)
	go func() { errc <- p.c.Call(context.Background(), "session/prompt", nil, nil) }()
	req := p.recvMsg()
	p.send(fmt.Sprintf(`{"id":%s,"result":null,"error":{"code":-32000,"message":"auth required"}}`, req.ID))
	if err := <-errc; !IsCode(err, -32000) {
		t.Fatalf("error response: %v", err)
	}
}

// A strict connection matches another spelling of our numeric id too,
// but not a string, and answers stray lines as the protocol requires.
func TestStrictCallIDs(t *testing.T) {
	t.Parallel()
	x, y := socketpair(t)
	c := NewConn(x, nil, Options{})
	serve(t, c)
	t.Cleanup(func() { y.Close() })
	w := &wire{t: t, nc: y, sc: newScanner(y)}

	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "m", nil, nil) }()
	req := w.recvMsg()
	if req.JSONRPC != version {
		t.Fatalf("strict request without jsonrpc: %+v", req)
	}
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%se0,"result":true}`, req.ID))
	if err := <-errc; err != nil {
		t.Fatalf("echo as %se0: %v", req.ID, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go func() { errc <- c.Call(ctx, "m", nil, nil) }()
	req = w.recvMsg()
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","result":true}`, req.ID))
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a string echo matched a strict call: %v", err)
	}
	if m := w.recvMsg(); m.Method != cancelMethod {
		t.Fatalf("after the timeout: %+v, want $/cancelRequest", m)
	}
	w.send("Loading model...")
	if m := w.recvMsg(); m.Error == nil || m.Error.Code != CodeParseError {
		t.Fatalf("stray line on a strict connection: %+v", m)
	}
}

// TestErrorDataAnyValue: an error reply whose data is not an object (JSON-RPC
// allows any value) fails the call with that error, data kept under
// "value", rather than leaving the call waiting.
func TestErrorDataAnyValue(t *testing.T) {
	for _, data := range []string{`"quota exceeded"`, `[1,2]`, `7`, `null`} {
		var e Error
		if err := json.Unmarshal([]byte(`{"code":-32000,"message":"m","data":`+data+`}`), &e); err != nil {
			t.Fatalf("data %s: %v", data, err)
		}
		if e.Code != -32000 || e.Message != "m" || (data != "null" && e.Data["value"] == nil) {
			t.Errorf("data %s: %+v", data, e)
		}
	}
}
