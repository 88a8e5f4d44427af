package api

import (
	"context"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// What the daemon keeps of exec output. A client that asks for the
// stream (Accept: application/x-ndjson, as agorctl does) gets each chunk
// as it comes and the daemon holds at most one chunk per call: the
// executor waits until the client took it. A client that asks for the
// one JSON reply gets at most MaxExecOutput a stream, and all of one
// person's such replies in flight hold at most MaxExecHeldPerUser
// together; the rest is counted in output_dropped_bytes, not kept.
const (
	MaxExecOutput      = 4 << 20
	MaxExecHeldPerUser = 16 << 20
	// execWriteStall is how long a streamed chunk may wait for the
	// client to read. Until it does, the executor's connection waits
	// (that person's only), so a client that stops reading loses its
	// call instead of holding the connection for good.
	execWriteStall = 30 * time.Second
)

// Outputs routes exec_output notifications to the exec calls made
// through the API, by exec_id.
type Outputs struct {
	mu   sync.Mutex
	byID map[string]*execOutput
	held map[string]int64 // bytes buffered for JSON replies, by person
}

// execOutput is one call's output: handed over one chunk at a time when
// ch is set, else buffered up to the bounds.
type execOutput struct {
	person string
	ch     chan protocol.ExecOutput // the streaming handler's; nil: buffered
	gone   chan struct{}            // closed when the call's handler stops taking output
	once   sync.Once

	stdout, stderr []byte
	dropped        int64
}

func (o *Outputs) start(person string, stream bool) (string, *execOutput) {
	id := randid.New(12)
	out := &execOutput{person: person, gone: make(chan struct{})}
	if stream {
		out.ch = make(chan protocol.ExecOutput)
	}
	o.mu.Lock()
	if o.byID == nil {
		o.byID, o.held = map[string]*execOutput{}, map[string]int64{}
	}
	o.byID[id] = out
	o.mu.Unlock()
	return id, out
}

// end forgets the call and gives back what its buffers held; output that
// arrives afterwards is dropped. It may be called more than once.
func (o *Outputs) end(id string) {
	o.mu.Lock()
	out := o.byID[id]
	delete(o.byID, id)
	if out != nil {
		if o.held[out.person] -= int64(len(out.stdout) + len(out.stderr)); o.held[out.person] <= 0 {
			delete(o.held, out.person)
		}
		out.stdout, out.stderr = nil, nil
	}
	o.mu.Unlock()
	if out != nil {
		out.once.Do(func() { close(out.gone) })
	}
}

// Handler serves exec_output and passes every other request to next.
func (o *Outputs) Handler(next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if r.Method != protocol.MethodExecOutput {
			if next == nil {
				return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method_not_found", "method %q not found", r.Method)
			}
			return next.Handle(ctx, r)
		}
		// Said by this executor's user, about an exec_id only the daemon
		// made and gave to this executor: it reaches that one call. What
		// is kept of it is bounded per call and per person (above).
		var p protocol.ExecOutput
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		o.deliver(ctx, p)
		return nil, nil
	})
}

// deliver runs on the connection's read loop. For a streamed call it
// waits until the handler took the chunk: the executor then waits too,
// and the command behind it once its pipe is full. That is the
// backpressure; it holds only this user's connection.
func (o *Outputs) deliver(ctx context.Context, p protocol.ExecOutput) {
	o.mu.Lock()
	out := o.byID[p.ExecID]
	if out != nil && out.ch == nil {
		o.bufferLocked(out, p.Stream, p.Data)
	}
	o.mu.Unlock()
	if out == nil || out.ch == nil {
		return
	}
	select {
	case out.ch <- p:
	case <-out.gone:
	case <-ctx.Done():
	}
}

func (o *Outputs) bufferLocked(out *execOutput, stream string, data []byte) {
	buf := &out.stdout
	if stream == protocol.StreamStderr {
		buf = &out.stderr
	}
	room := min(MaxExecOutput-int64(len(*buf)), MaxExecHeldPerUser-o.held[out.person])
	if room < int64(len(data)) {
		out.dropped += int64(len(data)) - max(room, 0)
		data = data[:max(room, 0)]
	}
	*buf = append(*buf, data...)
	o.held[out.person] += int64(len(data))
}
