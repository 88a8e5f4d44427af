package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// An exchange is one request and its response on a connection that leaves
// JSON-RPC afterwards (a terminal's raw stream, say): the first line each
// way is JSON-RPC, what follows is the method's own. These four functions
// are the only places outside Conn that read or write JSON-RPC.

// ErrBadResponse is returned by ReadResult for a line that is not a
// JSON-RPC response with a result or an error.
var ErrBadResponse = errors.New("bad JSON-RPC response")

// WriteRequest writes one request line.
func WriteRequest(w io.Writer, id int64, method string, params any) error {
	p, err := marshalParams(params)
	if err != nil {
		return err
	}
	b, err := appendMessage(nil, &message{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p}, false)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadResult reads one response line from rd, which bounds its length,
// into result. A JSON-RPC error comes back as *Error; a line that is not a
// response wraps ErrBadResponse; anything else is the reader's error.
func ReadResult(rd *bufio.Reader, result any) error {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return err
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	switch {
	case m.Error != nil:
		return m.Error
	case m.Result == nil:
		return fmt.Errorf("%w: no result", ErrBadResponse)
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("%w: result: %v", ErrBadResponse, err)
	}
	return nil
}

// ParseRequest decodes line when it is a JSON-RPC 2.0 request (a method
// and an id that is not null), with its id; ok is false for anything else.
func ParseRequest(line []byte) (r Request, id json.RawMessage, ok bool) {
	if len(line) == 0 || !bytes.Contains(line, []byte(`"method"`)) {
		return r, nil, false
	}
	var m message
	if json.Unmarshal(line, &m) != nil || m.JSONRPC != version || m.Method == "" || !validID(m.ID) || bytes.Equal(bytes.TrimSpace(m.ID), nullID) {
		return r, nil, false
	}
	return Request{Method: m.Method, Params: m.Params, Raw: line}, m.ID, true
}

// WriteResponse writes the response to the request with id: result, or
// err as an *Error (another error is an internal error).
func WriteResponse(w io.Writer, id json.RawMessage, result any, err error) error {
	m := &message{ID: id}
	if err != nil {
		m.Error = toError(context.Background(), err)
	} else if m.Result, err = marshalResult(result); err != nil {
		return err
	}
	b, err := appendMessage(nil, m, false)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
