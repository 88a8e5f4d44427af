package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// dispatch routes one decoded message, on the read loop. For a request it
// starts the handler and, when batch is nil, the handler sends its own
// response; inside a batch the response goes to batch instead. A non-nil
// return is an immediate reply.
func (c *Conn) dispatch(ctx context.Context, m *message, batch *batchReply) *message {
	k, verr := m.classify(c.opts.Lenient)
	switch k {
	case kindInvalid:
		id := m.ID
		if id == nil || !validID(id) {
			id = nullID
		}
		if c.opts.Lenient && string(id) == "null" {
			c.log.Debug("skipped a message that is not JSON-RPC", "line", truncate(m.Raw, 200))
			return nil
		}
		return &message{ID: id, Error: verr}
	case kindResponse:
		c.complete(m)
	case kindNotification:
		c.notification(ctx, m)
	case kindRequest:
		return c.request(ctx, m, batch)
	}
	return nil
}

// notification runs the handler of a notification on the read loop, so
// that notifications, and the responses after them, keep their order.
func (c *Conn) notification(ctx context.Context, m *message) {
	if m.Method == cancelMethod {
		c.cancelInflight(m.Params)
		return
	}
	if c.dirty { // replies the loop deferred must not wait on a slow handler
		c.dirty = false
		if c.flush() != nil {
			return
		}
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("notification handler panicked", "method", m.Method, "panic", fmt.Sprint(p))
		}
	}()
	req := &Request{Method: m.Method, Params: m.Params, Notification: true, Conn: c, Raw: m.Raw}
	if _, err := c.handler.Handle(ctx, req); err != nil {
		c.log.Debug("notification handler failed", "method", m.Method, "err", err)
	}
}

const cancelMethod = "$/cancelRequest"

func (c *Conn) cancelInflight(params json.RawMessage) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(params, &p) != nil || p.ID == nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[idKey(p.ID)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// request starts the handler of a request: on a goroutine of its own, or
// on the read loop when the handler says the method never blocks.
func (c *Conn) request(ctx context.Context, m *message, batch *batchReply) *message {
	select {
	case c.slots <- struct{}{}:
	default:
		return &message{ID: m.ID, Error: Errorf(CodeLimitReached, "too_many_requests",
			"too many requests in flight (limit %d)", c.opts.MaxInFlight)}
	}
	key := idKey(m.ID)
	hctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup || c.closed {
		c.mu.Unlock()
		cancel()
		<-c.slots
		return &message{ID: m.ID, Error: Errorf(CodeInvalidRequest, "duplicate_id",
			"invalid request: id %s is already in flight", key)}
	}
	c.inflight[key] = cancel
	c.mu.Unlock()
	batch.add()
	c.handled.Add(1)
	if c.inliner != nil && c.inliner.Inline(m.Method) {
		c.run(hctx, cancel, key, m, batch, c.loopMode())
		return nil
	}
	go c.run(hctx, cancel, key, m, batch, flushNow)
	return nil
}

func (c *Conn) run(ctx context.Context, cancel context.CancelFunc, key string, m *message, batch *batchReply, mode flushMode) {
	defer c.handled.Done()
	resp := c.handle(ctx, m)
	<-c.slots // the handler is done: a caller may start another now
	// The reply leaves before the request stops counting as in flight, so
	// a server that drains in-flight work before closing never cuts it off.
	if batch != nil {
		batch.put(resp)
	} else {
		c.send(resp, mode)
	}
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	cancel()
}

// handle runs the handler, turning panics and errors into error replies.
func (c *Conn) handle(ctx context.Context, m *message) (resp *message) {
	resp = &message{ID: m.ID}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", m.Method, "panic", fmt.Sprint(p))
			resp.Result, resp.Error = nil, Errorf(CodeInternalError, "internal_error", "internal error in %s", m.Method)
		}
	}()
	res, err := c.handler.Handle(ctx, &Request{Method: m.Method, Params: m.Params, Conn: c, Raw: m.Raw})
	if err != nil {
		resp.Error = toError(ctx, err)
		return resp
	}
	raw, err := marshalResult(res)
	if err != nil {
		resp.Error = Errorf(CodeInternalError, "internal_error", "encode result of %s: %v", m.Method, err)
		return resp
	}
	resp.Result = raw
	return resp
}

func marshalResult(res any) (json.RawMessage, error) {
	switch r := res.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		if len(r) == 0 { // as encoding/json marshals a nil RawMessage
			return json.RawMessage("null"), nil
		}
		return compactRaw(r)
	}
	return marshal(res)
}

// toError maps a handler's error to what the peer is told.
func toError(ctx context.Context, err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return Errorf(CodeRequestCancelled, "cancelled", "request cancelled")
	}
	return Errorf(CodeInternalError, "internal_error", "%v", err)
}

// complete hands a response to the call waiting for it.
func (c *Conn) complete(m *message) {
	id, ok := c.ourID(m.ID)
	var ch chan *message
	if ok {
		c.mu.Lock()
		ch = c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if ch == nil {
		c.log.Debug("response to no pending call", "id", idKey(m.ID))
		return
	}
	ch <- m
}

// ourID reads the id of a response as one of ours: the number we sent,
// however the peer spells it (1, 1.0, 1e0), or, from a lenient peer, a
// string of it.
func (c *Conn) ourID(raw json.RawMessage) (int64, bool) {
	if c.opts.Lenient && len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if n, ok := digits(raw); ok {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// digits parses a plain decimal integer without allocating.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// rejectLong answers a line that went past the limit, as well as can be
// told from its start: the caller's pending call fails, a notification is
// dropped with a log line, anything else gets an error with id null.
func (c *Conn) rejectLong(prefix []byte) {
	s := sniff(prefix)
	e := Errorf(CodeLimitReached, "message_too_large", "message exceeds the %d-byte line limit", c.opts.MaxLine)
	e.Data["limit"] = c.opts.MaxLine
	switch {
	case s.id != nil && !s.isMethod && c.hasPending(s.id):
		c.complete(&message{ID: s.id, Error: e})
	case s.id != nil:
		c.reply(&message{ID: s.id, Error: e})
	case s.isMethod || c.opts.Lenient:
		c.log.Warn("dropped over-long message", "limit", c.opts.MaxLine)
	default:
		c.reply(&message{ID: nullID, Error: e})
	}
}

func (c *Conn) hasPending(raw json.RawMessage) bool {
	id, ok := c.ourID(raw)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok = c.pending[id]
	return ok
}
