package rpc

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// The reader role. One goroutine at a time reads the connection: Serve's
// loop, or a Call waiting for its response. A caller that can take the
// role reads until its own response arrives and returns it itself, so
// the response needs no hand-off from the loop to the waiting goroutine.
// That hand-off is most of a round trip on a small machine: the loop
// readies the caller, the runtime wakes a second thread for it, and on
// two cores that thread competes with the peer process for the CPU.
//
// The loop gives the role up once it has delivered a response and no
// call is left waiting, so that a caller calling again takes it; after
// handBackAfter without one (a timer; in practice up to a millisecond
// when the process is idle) the loop reads again. A caller that cannot
// take the role waits for the reader to deliver its response, as before.

// handBackAfter is how long the role stays free before the loop reads
// again: messages the peer starts in that spell wait for it. One timer
// per connection, armed at most once per spell, measures it: resetting a
// timer at every call would wake an idle thread of the runtime each time
// (the poller is told of the earlier deadline), which costs what the role
// saves.
const handBackAfter = 500 * time.Microsecond

// errInterrupted ends a caller's read when its context ended.
var errInterrupted = errors.New("rpc: read interrupted")

// longAgo is a read deadline that has passed: it wakes a blocked read.
var longAgo = time.Unix(1, 0)

// roleHolder is a caller holding the role with a context that can end.
type roleHolder struct{ cancelled atomic.Bool }

type readDeadliner interface{ SetReadDeadline(time.Time) error }

// connReader is what the line reader reads: the connection, with a read
// deadline (set only to interrupt a caller whose context ended) taken as
// an interruption where nothing is lost by one (between lines, nothing
// buffered), and otherwise cleared and retried.
type connReader struct{ c *Conn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	for {
		n, err := c.rwc.Read(p)
		if err == nil || n > 0 || c.rdl == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if r.interrupt() {
			return 0, errInterrupted
		}
		_ = c.rdl.SetReadDeadline(time.Time{})
		if r.interrupt() { // the deadline may have been set before the clear
			return 0, errInterrupted
		}
	}
}

func (r connReader) interrupt() bool {
	h := r.c.holder.Load()
	return h != nil && h.cancelled.Load() && !r.c.lr.inLine && r.c.lr.br.Buffered() == 0
}

// kick wakes the loop to take the role.
func (c *Conn) kick() {
	select {
	case c.rdC <- struct{}{}:
	default:
	}
}

// releaseRole gives the role up. When calls wait for responses, or lines
// are already buffered, the loop is woken to read at once; otherwise only
// after handBackAfter, so that the next call can take the role.
func (c *Conn) releaseRole() {
	buffered := c.lr.br.Buffered() > 0
	c.rd.Unlock()
	c.mu.Lock()
	waiting := len(c.pending) > 0
	c.mu.Unlock()
	if buffered || waiting {
		c.kick()
		return
	}
	c.freedAt.Store(time.Now().UnixNano())
	if !c.armed.Swap(true) {
		c.rdTimer.Reset(handBackAfter)
	}
}

// quiet runs on the timer: it wakes the loop once the role has been free
// for handBackAfter, and otherwise waits for the rest of the spell. While
// a caller holds the role it does nothing: that caller arms it again.
func (c *Conn) quiet() {
	c.armed.Store(false)
	if c.callerReads.Load() {
		return
	}
	left := handBackAfter - time.Duration(time.Now().UnixNano()-c.freedAt.Load())
	if left <= 0 {
		c.kick()
		return
	}
	if !c.armed.Swap(true) {
		c.rdTimer.Reset(left)
	}
}

// readLoop is Serve's reader. It starts with the role held (NewConn took
// it on its behalf) and keeps it once it returns, so that nobody reads
// after Serve is done.
func (c *Conn) readLoop(ctx context.Context) error {
	for {
		line, err := c.lr.next()
		if err := c.handleRead(ctx, line, err); err != nil {
			c.rdErr = err
			return err
		}
		if c.lr.br.Buffered() > 0 || !c.responded.Swap(false) {
			continue
		}
		c.mu.Lock()
		idle := len(c.pending) == 0
		c.mu.Unlock()
		if !idle {
			continue
		}
		c.releaseRole()
		c.retake()
		if c.rdErr != nil {
			return c.rdErr
		}
		if c.isClosed() {
			return ErrClosed
		}
	}
}

// retake waits until the loop is woken and the role is free. A caller
// holding the role when the loop is woken wakes it again as it lets go,
// if it must.
func (c *Conn) retake() {
	for {
		select {
		case <-c.rdC:
			if c.rd.TryLock() {
				return
			}
		case <-c.done:
			c.rd.Lock() // a caller's read fails once the connection is closed
			return
		}
	}
}

// handleRead dispatches one line; a non-nil return ends the reading.
func (c *Conn) handleRead(ctx context.Context, line []byte, err error) error {
	switch {
	case errors.Is(err, errLineTooLong):
		c.rejectLong(c.lr.prefix())
	case err != nil:
		return err
	case line[0] == '[':
		c.readBatch(ctx, line)
	default:
		c.readOne(ctx, line)
	}
	return nil
}

// readFor reads, holding the role, until the response on ch arrives; it
// releases the role before it returns. got is false when the caller must
// wait on ch after all: its context ended, the connection did, or
// deliveries are queued (the response must not overtake them).
func (c *Conn) readFor(ctx context.Context, ch chan *message) (m *message, ok, got bool) {
	c.callerReads.Store(true)
	stop := func() bool { return false }
	defer func() {
		stop()
		c.holder.Store(nil)
		c.callerReads.Store(false) // before the release, which arms the timer
		c.releaseRole()
	}()
	if c.rdErr != nil || c.serveCtx == nil {
		return nil, false, false
	}
	if ctx.Done() != nil {
		if c.rdl == nil {
			return nil, false, false
		}
		h := new(roleHolder)
		c.holder.Store(h)
		stop = context.AfterFunc(ctx, func() {
			h.cancelled.Store(true)
			_ = c.rdl.SetReadDeadline(longAgo)
		})
	}
	for {
		select {
		case m, ok := <-ch:
			return m, ok, true
		default:
		}
		if c.lr.br.Buffered() == 0 && c.queued.Load() > 0 {
			return nil, false, false
		}
		line, err := c.lr.next()
		if errors.Is(err, errInterrupted) {
			_ = c.rdl.SetReadDeadline(time.Time{})
			return nil, false, false
		}
		if err := c.handleRead(c.serveCtx, line, err); err != nil {
			c.rdErr = err
			return nil, false, false
		}
	}
}
