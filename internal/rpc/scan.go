package rpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// scanMessage is decode's fast path: one validating pass over the
// top-level object that slices out its members, instead of json.Unmarshal's
// validation pass plus decoding pass. It accepts only input that
// json.Unmarshal accepts with the same result (FuzzScanMessage checks
// this) and returns ok=false for anything else, unusual or wrong, which
// then takes the slow path and its exact error.
func scanMessage(line []byte) (m *message, ok bool) {
	s := scanner{b: line}
	s.ws()
	if !s.consume('{') {
		return nil, false
	}
	m = new(message)
	s.ws()
	if s.consume('}') {
		return m, s.end()
	}
	for {
		if !s.member(m) {
			return nil, false
		}
		s.ws()
		if s.consume('}') {
			return m, s.end()
		}
		if !s.consume(',') {
			return nil, false
		}
		s.ws()
	}
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// member reads `"key": value` into m.
func (s *scanner) member(m *message) bool {
	start := s.i
	if !s.str() {
		return false
	}
	key := s.b[start+1 : s.i-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		return false // escaped keys: leave them to encoding/json
	}
	s.ws()
	if !s.consume(':') {
		return false
	}
	s.ws()
	vstart := s.i
	if !s.value(0) {
		return false
	}
	return assign(m, string(key), s.b[vstart:s.i])
}

// assign stores one member as json.Unmarshal would into message.
func assign(m *message, key string, v []byte) bool {
	switch key {
	case "jsonrpc":
		return plainString(v, &m.JSONRPC)
	case "method":
		return plainString(v, &m.Method)
	case "id":
		m.ID = append(json.RawMessage(nil), v...)
	case "params":
		m.Params = append(json.RawMessage(nil), v...)
	case "result":
		m.Result = append(json.RawMessage(nil), v...)
	case "error":
		return v[0] == '{' && json.Unmarshal(v, &m.Error) == nil
	default:
		// encoding/json matches field names case-insensitively.
		for _, k := range []string{"jsonrpc", "method", "id", "params", "result", "error"} {
			if strings.EqualFold(key, k) {
				return false
			}
		}
	}
	return true
}

// plainString accepts a string value without escapes, in valid UTF-8
// (encoding/json would replace invalid bytes with U+FFFD).
func plainString(v []byte, dst *string) bool {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return false
	}
	*dst = string(v[1 : len(v)-1])
	return true
}

const maxScanDepth = 64 // deeper values take the slow path

func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxScanDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) object(depth int) bool {
	s.i++
	s.ws()
	if s.consume('}') {
		return true
	}
	for {
		if !s.str() {
			return false
		}
		s.ws()
		if !s.consume(':') {
			return false
		}
		s.ws()
		if !s.value(depth + 1) {
			return false
		}
		s.ws()
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
		s.ws()
	}
}

func (s *scanner) array(depth int) bool {
	s.i++
	s.ws()
	if s.consume(']') {
		return true
	}
	for {
		if !s.value(depth + 1) {
			return false
		}
		s.ws()
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
		s.ws()
	}
}

// str skips a string, checking escapes and control characters as the
// JSON grammar requires.
func (s *scanner) str() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if !s.escape() {
				return false
			}
		}
	}
	return false
}

func (s *scanner) escape() bool {
	if s.i >= len(s.b) {
		return false
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		for range 4 {
			if s.i >= len(s.b) || !isHex(s.b[s.i]) {
				return false
			}
			s.i++
		}
		return true
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) number() bool {
	s.consume('-')
	if s.consume('0') {
		// no further integer digits after a leading zero
	} else if !s.digits() {
		return false
	}
	if s.consume('.') && !s.digits() {
		return false
	}
	if s.consume('e') || s.consume('E') {
		if !s.consume('+') {
			s.consume('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}
