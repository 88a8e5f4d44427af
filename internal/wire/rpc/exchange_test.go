package rpc

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestExchange(t *testing.T) {
	var req bytes.Buffer
	if err := WriteRequest(&req, 1, "attach", map[string]int{"offset": 3}); err != nil {
		t.Fatal(err)
	}
	if got := req.String(); got != `{"jsonrpc":"2.0","id":1,"method":"attach","params":{"offset":3}}`+"\n" {
		t.Fatalf("request %q", got)
	}
	r, id, ok := ParseRequest(req.Bytes())
	if !ok || r.Method != "attach" || string(id) != "1" || string(r.Params) != `{"offset":3}` {
		t.Fatalf("parsed %+v %s %v", r, id, ok)
	}
	var resp bytes.Buffer
	if err := WriteResponse(&resp, id, map[string]int{"offset": 7}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteResponse(&resp, id, nil, Errorf(CodeInvalidParams, "no_terminal", "no terminal")); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(&resp)
	var res struct{ Offset int }
	if err := ReadResult(rd, &res); err != nil || res.Offset != 7 {
		t.Fatalf("result %+v, %v", res, err)
	}
	var e *Error
	if err := ReadResult(rd, &res); !errors.As(err, &e) || e.Reason() != "no_terminal" {
		t.Fatalf("error reply: %v", err)
	}
}

func TestExchangeRefuses(t *testing.T) {
	for _, line := range []string{`{"id":1,"method":"x"`, `{"method":"x"}`, `{"id":null,"method":"x"}`, `{"id":{},"method":"x"}`, `[]`} {
		if r, _, ok := ParseRequest([]byte(line)); ok {
			t.Errorf("%s parsed as %+v", line, r)
		}
	}
	for _, line := range []string{"not json\n", `{"id":1}` + "\n", `{"id":1,"result":"str"}` + "\n"} {
		var res struct{ Offset int }
		if err := ReadResult(bufio.NewReader(strings.NewReader(line)), &res); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%q: %v", line, err)
		}
	}
	long := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\n"), 16)
	if err := ReadResult(long, new(any)); !errors.Is(err, bufio.ErrBufferFull) {
		t.Errorf("a line past the buffer: %v", err)
	}
}

// FuzzReadResult: whatever an executor answers, ReadResult returns a
// result or an error, never a panic.
func FuzzReadResult(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"offset":1}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var res struct{ Offset int64 }
		_ = ReadResult(bufio.NewReaderSize(bytes.NewReader(b), 64), &res)
		_, _, _ = ParseRequest(b)
	})
}
