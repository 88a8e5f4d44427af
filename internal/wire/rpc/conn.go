package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is one end of a symmetric JSON-RPC 2.0 connection over
// newline-delimited JSON: either side sends requests, notifications and
// responses. See the package documentation for who reads, who writes and
// in which order things happen.
type Conn struct {
	rwc     io.ReadWriteCloser
	handler Handler
	inliner Inliner // handler's, when it has one
	opts    Options
	log     *slog.Logger

	// The write side: one buffered writer behind a mutex (see write.go).
	wmu     sync.Mutex
	w       *bufio.Writer
	writers atomic.Int32  // writers waiting for wmu or holding it
	flushC  chan struct{} // asks the flusher to flush notifications

	// The read side, owned by Serve's read loop.
	lr    *lineReader
	dec   decoder
	dirty bool // the loop wrote and left the flush until it would wait

	nextID   atomic.Int64
	mu       sync.Mutex
	pending  map[int64]chan *message       // our calls awaiting a response
	inflight map[string]context.CancelFunc // the peer's requests being handled
	closed   bool
	closeErr error
	closing  atomic.Bool // Close was called

	slots   chan struct{} // the in-flight bound
	done    chan struct{}
	handled sync.WaitGroup
}

// NewConn wraps rwc. Nothing is read until Serve is called.
func NewConn(rwc io.ReadWriteCloser, h Handler, opts Options) *Conn {
	opts.setDefaults()
	if h == nil {
		h = NewMux()
	}
	c := &Conn{
		rwc:      rwc,
		handler:  h,
		opts:     opts,
		log:      opts.Logger,
		w:        bufio.NewWriterSize(rwc, 64<<10),
		flushC:   make(chan struct{}, 1),
		lr:       newLineReader(rwc, opts.MaxLine),
		pending:  make(map[int64]chan *message),
		inflight: make(map[string]context.CancelFunc),
		slots:    make(chan struct{}, opts.MaxInFlight),
		done:     make(chan struct{}),
	}
	c.inliner, _ = h.(Inliner)
	return c
}

// Serve reads and dispatches until the connection ends, then fails every
// pending call, cancels every handler and waits for them. Handler contexts
// derive from ctx, so values put there (such as the peer's credentials)
// reach every handler. It returns nil when the peer closed cleanly or
// Close was called.
func (c *Conn) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	flusher := make(chan struct{})
	go func() { defer close(flusher); c.flusher() }()

	err := c.readLoop(ctx)
	c.shutdown(err)
	cancel()
	<-flusher
	c.handled.Wait()
	if errors.Is(err, io.EOF) || c.closing.Load() {
		return nil
	}
	return err
}

// readLoop is the connection's only reader. Before it waits for more
// input it flushes what it wrote itself, so that replies to a burst of
// requests leave together.
func (c *Conn) readLoop(ctx context.Context) error {
	for {
		if c.dirty && !c.lr.hasLine() {
			c.dirty = false
			if err := c.flush(); err != nil {
				return err
			}
		}
		line, err := c.lr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			c.rejectLong(c.lr.prefix())
		case err != nil:
			return err
		default:
			c.readLine(ctx, line)
		}
	}
}

func (c *Conn) readLine(ctx context.Context, line []byte) {
	if c.opts.OnLine != nil {
		if line = c.opts.OnLine(line); len(line) == 0 {
			return
		}
	}
	if line[0] == '[' {
		c.readBatch(ctx, line)
		return
	}
	m, perr := c.dec.decode(line)
	if perr != nil {
		c.undecodable(m, perr, line)
		return
	}
	if resp := c.dispatch(ctx, m, nil); resp != nil {
		c.reply(resp)
	}
}

// undecodable answers a line that is no message: with id null when no id
// could be recovered. A lenient connection skips it instead when it has
// no id to answer.
func (c *Conn) undecodable(m *message, e *Error, line []byte) {
	id := orNull(m)
	if c.opts.Lenient && string(id) == "null" {
		c.log.Debug("skipped a line that is not JSON-RPC", "line", truncate(line, 200), "err", e.Message)
		return
	}
	c.reply(&message{ID: id, Error: e})
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func orNull(m *message) json.RawMessage {
	if m == nil || m.ID == nil {
		return nullID
	}
	return m.ID
}

// Close ends the connection; pending calls fail with ErrClosed.
// Messages still buffered are flushed first, for up to a second.
func (c *Conn) Close() error {
	c.closing.Store(true)
	if !c.isClosed() {
		if d, ok := c.rwc.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Now().Add(time.Second))
		}
		c.wmu.Lock()
		_ = c.w.Flush()
		c.wmu.Unlock()
	}
	c.shutdown(ErrClosed)
	return nil
}

// Done is closed once the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// InFlight counts the peer's requests being handled now.
func (c *Conn) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// shutdown ends the connection once: it closes rwc, which ends the read
// loop, cancels the peer's requests and fails our pending calls.
func (c *Conn) shutdown(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if cause == nil {
		cause = io.EOF
	}
	if c.closing.Load() {
		cause = ErrClosed
	}
	c.closeErr = cause
	pending := c.pending
	c.pending = map[int64]chan *message{}
	cancels := make([]context.CancelFunc, 0, len(c.inflight))
	for _, cancel := range c.inflight {
		cancels = append(cancels, cancel)
	}
	c.mu.Unlock()
	close(c.done)
	_ = c.rwc.Close() // first, so no cancelled handler's reply goes out
	for _, cancel := range cancels {
		cancel()
	}
	for _, ch := range pending {
		close(ch) // a closed channel tells the caller the connection ended
	}
}

// endErr wraps ErrClosed with the reason the connection ended.
func (c *Conn) endErr() error {
	err := c.Err()
	if err == nil || errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %v", ErrClosed, err)
}
