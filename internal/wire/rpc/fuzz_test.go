package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzLineReader: whatever arrives, no line longer than the limit is ever
// returned, the reader never panics, and it always reaches the end.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\r\n\n"), 8)
	f.Add(bytes.Repeat([]byte("x"), 100), 16)
	f.Add([]byte("short\n"+string(bytes.Repeat([]byte("y"), 70))+"\nafter\n"), 32)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		max = 1 + abs(max)%256
		lr := newLineReader(bytes.NewReader(data), max)
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("more results than bytes: the reader is not advancing")
			}
			line, err := lr.next()
			if errors.Is(err, errLineTooLong) {
				if len(lr.prefix()) > prefixKeep {
					t.Fatalf("prefix of %d bytes kept", len(lr.prefix()))
				}
				continue
			}
			if err != nil {
				return
			}
			if len(line) > max || len(line) == 0 || bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line %d: %q with limit %d", i, line, max)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// FuzzConn feeds arbitrary bytes to a serving Conn: it must not panic or
// hang, and every line it writes back must be a valid JSON-RPC reply.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2]}}`,
		`{"jsonrpc":"2.0","method":"echo"}`,
		`[{"jsonrpc":"2.0","id":"x","method":"typed","params":{"n":3}},{"jsonrpc":"2.0","id":2,"result":1}]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"typed","params":{"n":"bad"}}`,
		`[]`, `[1,2]`, `{`, `null`, `"` + string(bytes.Repeat([]byte("z"), 300)),
	} {
		f.Add([]byte(s + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x, y := socketpair(t)
		c := NewConn(x, testMux(), Options{MaxLine: 256, MaxInFlight: 4})
		served := make(chan error, 1)
		go func() { served <- c.Serve(context.Background()) }()
		go func() {
			_, _ = y.Write(data)
			_, _ = y.Write([]byte("\n"))
			_ = y.(interface{ CloseWrite() error }).CloseWrite()
		}()
		_ = y.SetReadDeadline(time.Now().Add(10 * time.Second))
		sc := bufio.NewScanner(y)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			checkReply(t, sc.Bytes())
		}
		if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("reading replies: %v", err)
		}
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not end after the peer closed")
		}
		y.Close()
	})
}

func checkReply(t *testing.T, line []byte) {
	t.Helper()
	var one message
	if json.Unmarshal(line, &one) == nil {
		if k, err := one.classify(false); k != kindResponse {
			t.Fatalf("reply %q is not a response: %v", line, err)
		}
		return
	}
	var batch []message
	if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
		t.Fatalf("reply %q is neither a response nor a batch of them: %v", line, err)
	}
	for _, m := range batch {
		if k, _ := m.classify(false); k != kindResponse {
			t.Fatalf("batch reply element %+v is not a response", m)
		}
	}
}

// FuzzDecode: the decoder calls a line unparseable exactly when it is not
// JSON, never panics, and whatever it accepts survives a round trip
// through the encoder unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2.5e-3,true,null,"x\u00e9"]}}`,
		`{"jsonrpc":"2.0","id":"s","result":null}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":{}}}`,
		`{"JSONRPC":"2.0"}`, `{"id":01}`, `{"id":1.}`, `{"id":-}`, `{"method":"a\"b"}`, `{}`, ` { "id" : 2 } `,
		`{"params":[[[[[]]]]]}`, `{"x":"\ud800"}`, `{"method":null}`, `{"id":1,}`, `{"a":1}x`, `{"\u006dethod":"m"}`,
		`{"id":1,"id":2}`, `{"error":7,"id":1}`, "{\"method\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var d decoder
		m, perr := d.decode(line)
		if (perr != nil && perr.Code == CodeParseError) == json.Valid(line) {
			t.Fatalf("%q: decode says %v, json.Valid says %v", line, perr, json.Valid(line))
		}
		if perr != nil {
			return
		}
		b, err := appendMessage(nil, m, false)
		if err != nil {
			return // a method that is not valid UTF-8 is refused on the way out
		}
		again, perr := d.decode(b)
		if perr != nil {
			t.Fatalf("%q re-encoded as %q: %v", line, b, perr)
		}
		if again.Method != m.Method || !bytes.Equal(again.ID, m.ID) || !bytes.Equal(again.Params, m.Params) ||
			!bytes.Equal(again.Result, m.Result) || (again.Error == nil) != (m.Error == nil) {
			t.Fatalf("%q: decoded %+v, after a round trip %+v", line, m, again)
		}
	})
}
