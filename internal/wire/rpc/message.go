package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

const version = "2.0"

// message is every JSON-RPC 2.0 object on the wire. ID is kept raw so that
// the peer's ids (numbers or strings) are echoed back byte for byte, and so
// that an absent id (notification) differs from "id": null. Raw is the
// whole object as received (nil for messages we make).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	Raw     json.RawMessage `json:"-"`
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
// A lenient reader accepts objects without "jsonrpc", and responses that
// carry an error beside a null result.
func (m *message) classify(lenient bool) (kind, *Error) {
	if m.JSONRPC != version && !(lenient && m.JSONRPC == "") {
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
	case lenient && m.Method == "" && m.ID != nil && m.Error != nil:
		return kindResponse, nil
	}
	return kindInvalid, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: not a request, notification or response")
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// decoder turns lines into messages in one validating pass (jsontext, the
// tokenizer of encoding/json/v2), slicing the members out of a single copy
// of the line instead of decoding and copying each one. It is used by the
// read loop only.
type decoder struct {
	dec   jsontext.Decoder
	buf   bytes.Buffer
	names map[string]string // method names seen, so each is allocated once
}

// decode parses one object. The returned *Error, when set, is what the
// peer should be told: -32700 for text that is not JSON, -32600 for JSON
// that is not a JSON-RPC object. The id is recovered where it can be.
// line is copied; the message does not alias it.
func (d *decoder) decode(line []byte) (*message, *Error) {
	own := bytes.Clone(line)
	m, bad, err := d.object(own)
	switch {
	case err != nil:
		return nil, Errorf(CodeParseError, "parse_error", "parse error: %v", err)
	case bad != "":
		if m.ID != nil && !validID(m.ID) {
			m.ID = nil
		}
		return m, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: %s", bad)
	}
	m.Raw = own
	return m, nil
}

// object reads the members of one top-level object. err is set when the
// line is not (exactly one) JSON value; bad when it is JSON but not a
// message's shape (m still holds what was read, for its id).
func (d *decoder) object(line []byte) (m *message, bad string, err error) {
	d.buf = *bytes.NewBuffer(line)
	d.dec.Reset(&d.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	m = new(message)
	if d.dec.PeekKind() != '{' {
		if _, err := d.dec.ReadValue(); err != nil {
			return m, "", err
		}
		return m, "not an object", d.end()
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return m, "", err
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return m, "", err
		}
		v, err := d.dec.ReadValue()
		if err != nil {
			return m, "", err
		}
		// The value as a slice of line itself (ReadValue's may be the
		// decoder's own buffer, valid only until the next read).
		end := int(d.dec.InputOffset())
		v = jsontext.Value(line[end-len(v) : end])
		if problem := d.assign(m, name, v); problem != "" && bad == "" {
			bad = problem
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return m, "", err
	}
	return m, bad, d.end()
}

// end checks that nothing but white space follows the value.
func (d *decoder) end() error {
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("text after the value")
		}
		return err
	}
	return nil
}

// assign stores one member; the names are matched exactly, as JSON-RPC
// spells them. It returns what is wrong with the member, if anything.
func (d *decoder) assign(m *message, name jsontext.Value, v jsontext.Value) string {
	if bytes.IndexByte(name, '\\') >= 0 {
		unq, err := jsontext.AppendUnquote([]byte{'"'}, name)
		if err != nil {
			return "bad member name"
		}
		name = append(unq, '"')
	}
	switch string(name) { // compared without allocating
	case `"jsonrpc"`:
		if string(v) == `"2.0"` {
			m.JSONRPC = version // the usual case, without allocating
			return ""
		}
		return str(v, &m.JSONRPC, `"jsonrpc" must be "2.0"`)
	case `"method"`:
		return d.method(m, v)
	case `"id"`:
		m.ID = json.RawMessage(v)
	case `"params"`:
		m.Params = json.RawMessage(v)
	case `"result"`:
		m.Result = json.RawMessage(v)
	case `"error"`:
		m.Error = nil
		if v.Kind() == 'n' {
			return ""
		}
		if v.Kind() != '{' || json.Unmarshal(v, &m.Error) != nil {
			return `"error" must be an error object`
		}
	}
	return ""
}

// method decodes the method name, reusing the string of a name seen before.
func (d *decoder) method(m *message, v jsontext.Value) string {
	if v.Kind() == '"' && bytes.IndexByte(v, '\\') < 0 {
		if name, ok := d.names[string(v[1:len(v)-1])]; ok {
			m.Method = name
			return ""
		}
	}
	if problem := str(v, &m.Method, `"method" must be a string`); problem != "" {
		return problem
	}
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < 64 {
		d.names[m.Method] = m.Method
	}
	return ""
}

// str decodes a string member.
func str(v jsontext.Value, dst *string, problem string) string {
	if v.Kind() != '"' {
		return problem
	}
	if bytes.IndexByte(v, '\\') < 0 {
		*dst = string(v[1 : len(v)-1])
		return ""
	}
	unq, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return problem
	}
	*dst = string(unq)
	return ""
}

// idKey is the map key for a peer's id: its raw text, with a number's and
// a string's spelling kept distinct.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// appendMessage encodes m as one compact line (without the newline). It
// writes the envelope itself rather than through json.Marshal, which would
// validate and compact params and result a second time: they come from
// json.Marshal already (see marshalParams, marshalResult), or from the
// peer's own decoded message (ids). With bare set, "jsonrpc" is left out
// (for peers that speak JSON-RPC without it).
func appendMessage(b []byte, m *message, bare bool) ([]byte, error) {
	b = append(b, '{')
	if !bare {
		b = append(b, `"jsonrpc":"2.0",`...)
	}
	if m.ID != nil {
		b = append(append(append(b, `"id":`...), m.ID...), ',')
	}
	if m.Method != "" {
		var err error
		b = append(b, `"method":`...)
		if b, err = jsontext.AppendQuote(b, m.Method); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	if m.Params != nil {
		b = append(append(append(b, `"params":`...), m.Params...), ',')
	}
	if m.Result != nil {
		b = append(append(append(b, `"result":`...), m.Result...), ',')
	}
	if m.Error != nil {
		e, err := json.Marshal(m.Error)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, `"error":`...), e...), ',')
	}
	if b[len(b)-1] == ',' {
		b = b[:len(b)-1]
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
