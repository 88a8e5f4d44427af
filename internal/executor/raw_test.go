package executor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// echoRaw is a raw method for the tests: it replies with its params,
// then echoes what it reads, upper-cased, until the peer closes.
func echoRaw(_ context.Context, params json.RawMessage, reply func(any, error) error, conn net.Conn) {
	var p struct{ Fail bool }
	_ = json.Unmarshal(params, &p)
	if p.Fail {
		_ = reply(nil, rpc.InvalidParams("fail", "asked to"))
		return
	}
	if reply(params, nil) != nil {
		return
	}
	buf := make([]byte, 1024)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			_, _ = conn.Write([]byte(strings.ToUpper(string(buf[:n]))))
		}
		if err != nil {
			return
		}
	}
}

func withEcho(s *Server) { s.HandleRaw("echo_raw", echoRaw) }

func dialRaw(t *testing.T, path, first string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, first) // a refused peer may see its write fail
	return c, bufio.NewReader(c)
}

// A connection whose first request names a raw method is handed over:
// one JSON-RPC reply, then bytes both ways (the first ones may follow the
// request in the same write). JSON-RPC connections, even with a first
// line longer than what is looked at, are served as before.
func TestRawConnection(t *testing.T) {
	f := start(t, Config{Policy: self()}, withEcho)
	c, r := dialRaw(t, f.path, `{"jsonrpc":"2.0","id":7,"method":"echo_raw","params":{"x":1}}`+"\nabc")
	line, err := r.ReadString('\n')
	if err != nil || line != `{"jsonrpc":"2.0","id":7,"result":{"x":1}}`+"\n" {
		t.Fatalf("reply %q, %v", line, err)
	}
	if got := readN(t, r, 3); got != "ABC" {
		t.Fatalf("echo %q", got)
	}
	_, _ = c.Write([]byte("def"))
	if got := readN(t, r, 3); got != "DEF" {
		t.Fatalf("echo %q", got)
	}

	_, r = dialRaw(t, f.path, `{"jsonrpc":"2.0","id":"a","method":"echo_raw","params":{"Fail":true}}`+"\n")
	if line, _ := r.ReadString('\n'); !strings.Contains(line, `"error":{"code":-32602`) || !strings.Contains(line, `"id":"a"`) {
		t.Fatalf("refusal %q", line)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after a refusal: %v, want EOF", err)
	}

	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2*firstLineMax) + `"}}` + "\n"
	_, r = dialRaw(t, f.path, long)
	if line, _ := r.ReadString('\n'); !strings.Contains(line, `"pong":true`) {
		t.Fatalf("long first line: %q", line)
	}
	var res protocol.PingResult
	if err := dial(t, f.path).Call(context.Background(), "ping", nil, &res); err != nil || !res.Pong {
		t.Fatalf("ping: %+v %v", res, err)
	}
}

func readN(t *testing.T, r *bufio.Reader, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A peer the policy refuses never reaches a raw method.
func TestRawRefusesOtherPeers(t *testing.T) {
	called := make(chan struct{}, 1)
	f := start(t, Config{Policy: peer.Policy{UID: uint32(os.Getuid()) + 4242}}, func(s *Server) {
		s.HandleRaw("echo_raw", func(context.Context, json.RawMessage, func(any, error) error, net.Conn) { called <- struct{}{} })
	})
	_, r := dialRaw(t, f.path, `{"jsonrpc":"2.0","id":1,"method":"echo_raw"}`+"\n")
	if b, err := r.ReadByte(); err == nil || os.IsTimeout(err) { // EOF, or reset: the request went unread
		t.Fatalf("refused peer read %q, %v; want the connection closed", b, err)
	}
	select {
	case <-called:
		t.Fatal("the raw method ran for a refused peer")
	default:
	}
}

// Stop closes raw connections, so Serve returns while one is open.
func TestRawClosedOnStop(t *testing.T) {
	f := start(t, Config{Policy: self()}, withEcho)
	_, r := dialRaw(t, f.path, `{"jsonrpc":"2.0","id":1,"method":"echo_raw"}`+"\n")
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, idle := dialRaw(t, f.path, "") // says nothing: undecided
	f.srv.Stop("test")
	if err := f.wait(t); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.ReadByte(); err == nil || os.IsTimeout(err) {
		t.Fatalf("undecided connection after Stop: %v", err)
	}
}

// FuzzFirstLine: whatever a connection starts with, the sniffing that
// tells a raw request from JSON-RPC consumes nothing, never panics, and
// picks a raw method only for a whole line naming it with an id.
func FuzzFirstLine(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"echo_raw","params":{}}` + "\nabc"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"echo_raw"}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	f.Add([]byte(`[{"method":"echo_raw","id":1}]` + "\n"))
	s := NewServer(Config{})
	s.HandleRaw("echo_raw", echoRaw)
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), firstLineMax)
		line := firstLine(br)
		if line != nil && (!bytes.HasPrefix(data, line) || line[len(line)-1] != '\n') {
			t.Fatalf("line %q is not the start of the input", line)
		}
		req, fn := s.rawRequest(line)
		if fn != nil && req.Method != "echo_raw" {
			t.Fatalf("raw method for %q", req.Method)
		}
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, data) {
			t.Fatal("sniffing consumed input")
		}
	})
}
