package rpc

import (
	"bytes"
	"encoding/json"
)

const version = "2.0"

// message is every JSON-RPC 2.0 object on the wire. ID is kept raw so that
// the peer's ids (numbers or strings) are echoed back byte for byte, and so
// that an absent id (notification) differs from "id": null.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

type kind int

const (
	kindInvalid kind = iota
	kindRequest
	kindNotification
	kindResponse
)

var nullID = json.RawMessage("null")

// classify tells what a decoded object is, or why it is not a valid one.
func (m *message) classify() (kind, *Error) {
	if m.JSONRPC != version {
		return kindInvalid, Errorf(CodeInvalidRequest, "invalid_request", `invalid request: "jsonrpc" must be "2.0"`)
	}
	switch {
	case m.Method != "" && m.Result == nil && m.Error == nil:
		if m.ID == nil {
			return kindNotification, nil
		}
		if !validID(m.ID) {
			return kindInvalid, Errorf(CodeInvalidRequest, "invalid_request", `invalid request: "id" must be a string, number or null`)
		}
		return kindRequest, nil
	case m.Method == "" && m.ID != nil && (m.Result != nil) != (m.Error != nil):
		return kindResponse, nil
	}
	return kindInvalid, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: not a request, notification or response")
}

func validID(id json.RawMessage) bool {
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// decode parses one object. The returned *Error, when set, is what the
// peer should be told: -32700 for text that is not JSON, -32600 for JSON
// that is not a JSON-RPC object. The id is recovered where it can be.
func decode(line []byte) (*message, *Error) {
	if m, ok := scanMessage(line); ok {
		return m, nil
	}
	m := new(message)
	if err := json.Unmarshal(line, m); err != nil {
		if !json.Valid(line) {
			return nil, Errorf(CodeParseError, "parse_error", "parse error: %v", err)
		}
		m = &message{ID: sniffID(line)}
		return m, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: %v", err)
	}
	return m, nil
}

// sniffID recovers a usable id from a malformed but valid JSON object, so
// the error reply reaches the caller's pending call.
func sniffID(line []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil && probe.ID != nil && validID(probe.ID) {
		return probe.ID
	}
	return nil
}

// idKey is the map key for an id: its raw text, with a number's and a
// string's spelling kept distinct.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// appendMessage encodes m as one compact line (without the newline). It
// writes the envelope itself rather than through json.Marshal, which would
// validate and compact params and result a second time: they come from
// json.Marshal already (see marshalParams, marshalResult), or from the
// peer's own decoded message (ids).
func appendMessage(b []byte, m *message) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		b = append(append(b, `,"id":`...), m.ID...)
	}
	if m.Method != "" {
		q, err := json.Marshal(m.Method)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"method":`...), q...)
	}
	if m.Params != nil {
		b = append(append(b, `,"params":`...), m.Params...)
	}
	if m.Result != nil {
		b = append(append(b, `,"result":`...), m.Result...)
	}
	if m.Error != nil {
		e, err := json.Marshal(m.Error)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"error":`...), e...)
	}
	return append(b, '}'), nil
}

// compactRaw makes caller-supplied raw JSON safe to frame: valid, and
// without the newlines indentation would put in it.
func compactRaw(raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.ContainsAny(raw, "\n\r\t ") && json.Valid(raw) {
		return raw, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
