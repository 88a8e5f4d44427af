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
		c.replyError(nil, Errorf(code, reason, "invalid batch: %v", err))
		return
	}
	if len(elems) == 0 {
		c.replyError(nil, Errorf(CodeInvalidRequest, "invalid_request", "invalid request: empty batch"))
		return
	}
	b := new(batchReply)
	for _, raw := range elems {
		m, perr := decode(raw)
		if perr != nil {
			b.direct(&message{JSONRPC: version, ID: orNull(m), Error: perr})
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
			if err := c.write(b.replies, false); err != nil {
				c.log.Debug("write batch reply failed", "err", err)
			}
		}
	}()
}

func orNull(m *message) json.RawMessage {
	if m == nil || m.ID == nil {
		return nullID
	}
	return m.ID
}
