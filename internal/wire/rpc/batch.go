package rpc

import (
	"context"
	"encoding/json"
	"sync"
)

// batchReply gathers the responses to one batch; they are sent together,
// as one array, once every request in it has been handled.
type batchReply struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	replies []*message
}

func (b *batchReply) add() {
	if b != nil {
		b.wg.Add(1)
	}
}

func (b *batchReply) put(m *message) {
	b.mu.Lock()
	b.replies = append(b.replies, m)
	b.mu.Unlock()
	b.wg.Done()
}

func (b *batchReply) direct(m *message) {
	b.wg.Add(1)
	b.put(m)
}

// readBatch handles a JSON array per the JSON-RPC 2.0 batch rules: each
// element is handled as if alone, notifications get no reply, an empty
// array is one -32600, and a batch of only notifications gets nothing.
// Responses to our calls may also arrive batched.
func (c *Conn) readBatch(ctx context.Context, line []byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		code, reason := CodeInvalidRequest, "invalid_request"
		if !json.Valid(line) {
			code, reason = CodeParseError, "parse_error"
		}
		c.undecodable(nil, Errorf(code, reason, "invalid batch: %v", err), line)
		return
	}
	if len(elems) == 0 {
		c.undecodable(nil, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: empty batch"), line)
		return
	}
	b := new(batchReply)
	for _, raw := range elems {
		m, perr := c.dec.decode(raw)
		if perr != nil {
			b.direct(&message{ID: orNull(m), Error: perr})
			continue
		}
		if r := c.dispatch(ctx, m, b); r != nil {
			b.direct(r)
		}
	}
	c.handled.Add(1)
	go func() {
		defer c.handled.Done()
		b.wg.Wait()
		if len(b.replies) > 0 {
			c.sendBatch(b.replies)
		}
	}()
}

// sendBatch writes replies as one array on one line.
func (c *Conn) sendBatch(replies []*message) {
	line := []byte{'['}
	var err error
	for i, m := range replies {
		if i > 0 {
			line = append(line, ',')
		}
		if line, err = appendMessage(line, m, c.opts.Bare); err != nil {
			c.log.Debug("encode batch reply failed", "err", err)
			return
		}
	}
	if err := c.write(append(line, ']', '\n'), flushNow); err != nil {
		c.log.Debug("write batch reply failed", "err", err)
	}
}
