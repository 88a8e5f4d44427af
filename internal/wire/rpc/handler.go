package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Request is one incoming request or notification.
type Request struct {
	Method       string
	Params       json.RawMessage
	Notification bool
	Conn         *Conn // the connection it came on, to call or notify back
	// Raw is the whole message as it was read (after Options.OnLine), for
	// handlers that record what the peer sent.
	Raw json.RawMessage
}

// Handler serves the peer's requests and notifications. A request's
// context ends when the peer cancels it or the connection closes.
// Notifications are handled one at a time, in order, so a notification
// handler must not wait on a call over the same connection.
type Handler interface {
	Handle(ctx context.Context, r *Request) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, r *Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, r *Request) (any, error) { return f(ctx, r) }

// Inliner is implemented by handlers that can say a method never blocks:
// its requests then run on the connection's read loop, which saves the
// hand-off to a new goroutine (on a small VM, most of a round trip).
type Inliner interface {
	Inline(method string) bool
}

// Mux routes by method name.
type Mux struct {
	mu      sync.RWMutex
	methods map[string]HandlerFunc
	inline  map[string]bool
}

var (
	_ Handler = (*Mux)(nil)
	_ Inliner = (*Mux)(nil)
)

// NewMux returns an empty Mux: every method is "method not found".
func NewMux() *Mux { return &Mux{methods: map[string]HandlerFunc{}, inline: map[string]bool{}} }

// Register routes method to h, replacing any earlier handler.
func (x *Mux) Register(method string, h HandlerFunc) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.methods[method] = h
	delete(x.inline, method)
}

// RegisterInline routes method to h, run on the read loop. h must return
// in microseconds and never wait: while it runs, nothing is read.
func (x *Mux) RegisterInline(method string, h HandlerFunc) {
	x.Register(method, h)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.inline[method] = true
}

// Inline reports whether method was registered with RegisterInline.
func (x *Mux) Inline(method string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.inline[method]
}

// Handle dispatches r to its method's handler.
func (x *Mux) Handle(ctx context.Context, r *Request) (any, error) {
	x.mu.RLock()
	h := x.methods[r.Method]
	x.mu.RUnlock()
	if h == nil {
		e := Errorf(CodeMethodNotFound, "method_not_found", "method not found: %q", r.Method)
		e.Data["method"] = r.Method
		return nil, e
	}
	return h(ctx, r)
}

// Validator is implemented by params that check their own fields after
// decoding; return InvalidParams to name the field.
type Validator interface {
	Validate() error
}

// Method adapts a typed function: params are decoded into P (and
// validated) before f runs; a decoding failure is -32602 naming the field.
func Method[P, R any](f func(context.Context, P) (R, error)) HandlerFunc {
	return func(ctx context.Context, r *Request) (any, error) {
		var p P
		if err := Bind(r.Params, &p); err != nil {
			return nil, err
		}
		return f(ctx, p)
	}
}

// Bind decodes params into v and validates it. Omitted params decode as {}.
// Unknown fields are ignored, so newer peers can add fields.
func Bind(params json.RawMessage, v any) error {
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		params = json.RawMessage("{}")
	}
	if err := unmarshal(params, v); err != nil {
		return paramsError(err)
	}
	val, ok := v.(Validator)
	if !ok {
		return nil
	}
	err := val.Validate()
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return InvalidParams("params", err.Error())
}

func paramsError(err error) *Error {
	var te *unmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "params"
		}
		return InvalidParams(field, fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value))
	}
	return InvalidParams("params", err.Error())
}
