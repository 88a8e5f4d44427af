package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes of the connection itself. The first five are JSON-RPC 2.0's
// own; CodeRequestCancelled follows LSP; CodeLimitReached, in the
// -32000..-32099 range the specification reserves for servers, is what
// this package answers past its own limits (in-flight requests, line
// length). The application's codes and reasons are in package protocol.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
	CodeLimitReached     = -32003 // too many requests; message too large
)

// Error is a JSON-RPC error object. Data carries a machine-readable reason:
// every error this package makes has data {"reason": "..."} and sometimes
// more fields.
type Error struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message)
}

// UnmarshalJSON takes any "data" a peer sends: JSON-RPC 2.0 allows any
// value there, and refusing an error whose data is, say, a string would
// leave the call it answers waiting forever. Data that is not an object
// is kept as {"value": DATA}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var raw struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Code, e.Message, e.Data = raw.Code, raw.Message, nil
	if len(raw.Data) == 0 || string(raw.Data) == "null" {
		return nil
	}
	if json.Unmarshal(raw.Data, &e.Data) == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw.Data, &v); err != nil {
		return err
	}
	e.Data = map[string]any{"value": v}
	return nil
}

// Reason returns data.reason, or "" when there is none.
func (e *Error) Reason() string {
	r, _ := e.Data["reason"].(string)
	return r
}

// Errorf builds an Error with a reason and a formatted message.
func Errorf(code int, reason, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Data: map[string]any{"reason": reason}}
}

// InvalidParams names the offending field, as the protocol requires.
func InvalidParams(field, problem string) *Error {
	e := Errorf(CodeInvalidParams, "invalid_params", "invalid params: %s: %s", field, problem)
	e.Data["field"] = field
	return e
}

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Local errors: these never cross the wire.
var (
	// ErrClosed fails calls on a connection that has ended.
	ErrClosed = errors.New("rpc: connection closed")
	// ErrTooLarge is returned when a message to send exceeds the line limit.
	ErrTooLarge = errors.New("rpc: message exceeds line limit")
)
