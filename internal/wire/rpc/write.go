package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// flushMode says who makes sure a written message leaves the buffer.
type flushMode int

const (
	// flushNow: someone waits for this message (a call or a reply).
	flushNow flushMode = iota
	// flushSoon: the flusher goroutine flushes (notifications), so that a
	// stream of them leaves in large writes.
	flushSoon
	// flushByLoop: written by the read loop, which flushes before it next
	// waits for input, so that replies to a burst of requests coalesce.
	flushByLoop
)

// write puts one encoded line (newline included) in the buffer. Whoever
// writes last, with nobody else waiting for the mutex, sees that the
// buffer is flushed; a writer who sees others waiting leaves it to them,
// so concurrent messages leave in few system calls.
func (c *Conn) write(line []byte, mode flushMode) error {
	if len(line)-1 > c.opts.MaxLine {
		return fmt.Errorf("%w (%d > %d bytes)", ErrTooLarge, len(line)-1, c.opts.MaxLine)
	}
	c.writers.Add(1)
	c.wmu.Lock()
	_, err := c.w.Write(line)
	if c.writers.Add(-1) == 0 && err == nil {
		switch mode {
		case flushNow:
			err = c.w.Flush()
		case flushSoon:
			c.requestFlush()
		case flushByLoop:
			c.dirty = true
		}
	}
	c.wmu.Unlock()
	if err != nil {
		c.shutdown(fmt.Errorf("rpc: write: %w", err))
		return ErrClosed
	}
	return nil
}

// flush writes out the buffer now.
func (c *Conn) flush() error {
	c.wmu.Lock()
	err := c.w.Flush()
	c.wmu.Unlock()
	if err != nil {
		c.shutdown(fmt.Errorf("rpc: write: %w", err))
	}
	return err
}

func (c *Conn) requestFlush() {
	select {
	case c.flushC <- struct{}{}:
	default: // a flush is already due
	}
}

// flusher writes out notifications until the connection ends.
func (c *Conn) flusher() {
	for {
		select {
		case <-c.done:
			return
		case <-c.flushC:
		}
		if c.flush() != nil {
			return
		}
	}
}

// send encodes and writes m; failures mean the connection is ending,
// which the read loop notices.
func (c *Conn) send(m *message, mode flushMode) {
	b, err := c.encode(m)
	if err == nil {
		err = c.write(*b, mode)
		putBuf(b)
	}
	if err != nil {
		c.log.Debug("write reply failed", "err", err)
	}
}

// reply sends a reply from the read loop.
func (c *Conn) reply(m *message) { c.send(m, c.loopMode()) }

// loopMode is how the read loop's own writes are flushed: later, when
// another line is already waiting to be read; at once otherwise.
func (c *Conn) loopMode() flushMode {
	if c.lr.hasLine() {
		return flushByLoop
	}
	return flushNow
}

// Notify sends a notification. Notifications sent by one goroutine arrive
// in the order sent.
func (c *Conn) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if c.isClosed() {
		return ErrClosed
	}
	b, err := c.encode(&message{Method: method, Params: raw})
	if err != nil {
		return err
	}
	defer putBuf(b)
	return c.write(*b, flushSoon)
}

// Call sends a request and waits for its response, decoding the result
// into result (which may be nil). When ctx ends first, the peer is sent
// $/cancelRequest and Call returns ctx's error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	id := c.nextID.Add(1)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("call %s: %w", method, ErrClosed)
	}
	c.pending[id] = ch
	c.mu.Unlock()

	var idb [20]byte
	rawID := strconv.AppendInt(idb[:0], id, 10)
	b, err := c.encode(&message{ID: rawID, Method: method, Params: raw})
	if err == nil {
		err = c.write(*b, flushNow)
		putBuf(b)
	}
	if err != nil {
		c.forget(id)
		return fmt.Errorf("call %s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		return c.result(method, m, ok, result)
	case <-ctx.Done():
		c.forget(id)
		_ = c.Notify(cancelMethod, map[string]int64{"id": id})
		return ctx.Err()
	}
}

// result decodes a response received from ch (ok false: ch was closed).
func (c *Conn) result(method string, m *message, ok bool, result any) error {
	if !ok {
		return fmt.Errorf("call %s: %w", method, c.endErr())
	}
	if m.Error != nil {
		return m.Error
	}
	if result == nil {
		return nil
	}
	if err := unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("call %s: decode result: %w", method, err)
	}
	return nil
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw, err := compactRaw(p)
		if err != nil {
			return nil, fmt.Errorf("rpc: params: %w", err)
		}
		return raw, nil
	}
	raw, err := marshal(params)
	if err != nil {
		return nil, fmt.Errorf("rpc: encode params: %w", err)
	}
	return raw, nil
}

// bufs recycles encoding buffers: a stream of notifications otherwise
// makes garbage at the rate it sends.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 { // do not keep a rare large buffer alive
		*b = (*b)[:0]
		bufs.Put(b)
	}
}

// encode returns m as one line, newline included, in a pooled buffer.
func (c *Conn) encode(m *message) (*[]byte, error) {
	b := bufs.Get().(*[]byte)
	var err error
	if *b, err = appendMessage(*b, m, c.opts.Bare); err != nil {
		putBuf(b)
		return nil, fmt.Errorf("rpc: encode: %w", err)
	}
	*b = append(*b, '\n')
	return b, nil
}
