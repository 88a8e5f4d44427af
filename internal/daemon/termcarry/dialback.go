package termcarry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
)

// The dial-back carrier is for the executors that dialled back (the
// slurm backend): they cannot take a connection beside their shared one,
// so a terminal's bytes come as terminal_output notifications on it, and
// go to the client as NDJSON apiwire.Frame lines, base64 in JSON. The
// API answers a raw attach to such an executor with this stream, and the
// client follows the Upgrade of the reply. A client may also ask for it
// by name (DialBackUpgrade), as the terminal benchmark does to compare it.

// DialBackUpgrade is the Upgrade of the dial-back carrier's stream.
const DialBackUpgrade = "agor-terminal"

// dialBackClient is one client attached through the dial-back carrier.
// Until the attach reply (scrollback) is written, output is held back so
// nothing arrives out of order.
type dialBackClient struct {
	mu      sync.Mutex
	enc     *json.Encoder
	flush   func() error
	ready   bool
	from    int64 // first seq not in the scrollback
	pending []protocol.TerminalOutput
	held    int           // bytes in pending, at most maxPending
	done    chan struct{} // closed on exit
	once    sync.Once
}

// maxPending bounds the output held for a dial-back client until its
// attach reply; a well-behaved executor sends a few chunks in that time.
const maxPending = 4 << 20

func (c *dialBackClient) output(o protocol.TerminalOutput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		// The executor sends both this output and the attach reply, so
		// it could hold the reply back and flood: what is kept meanwhile
		// is bounded, and output past the bound is not kept.
		if c.held+len(o.Data) <= maxPending {
			c.held += len(o.Data)
			c.pending = append(c.pending, o)
		}
		return
	}
	if o.Seq >= c.from {
		c.write(apiwire.Frame{Output: o.Data})
	}
}

// replaced leaves a dial-back client open, as it always was: it just
// gets no more output.
func (c *dialBackClient) replaced() {}

func (c *dialBackClient) exit(e protocol.TerminalExit) {
	c.mu.Lock()
	c.write(apiwire.Frame{Exit: &e})
	c.mu.Unlock()
	c.once.Do(func() { close(c.done) })
}

// start writes the scrollback, then whatever output came meanwhile.
func (c *dialBackClient) start(a protocol.AttachTerminalResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready, c.from = true, a.Seq
	if len(a.Scrollback) > 0 {
		c.write(apiwire.Frame{Output: a.Scrollback})
	}
	for _, o := range c.pending {
		if o.Seq >= c.from {
			c.write(apiwire.Frame{Output: o.Data})
		}
	}
	c.pending = nil
}

// write sends one frame; the client's pace holds back the executor's
// notifications (backpressure), a failed client is simply skipped.
func (c *dialBackClient) write(f apiwire.Frame) {
	if c.enc.Encode(f) == nil {
		_ = c.flush()
	}
}

// ServeDialBack serves the client on conn, taken from the HTTP server
// (rw is what it had buffered), with the dial-back carrier: it writes the
// 101 reply, attaches over the shared JSON-RPC connection, and carries
// frames until the client detaches or goes, or the shell exits. The
// caller closes conn.
func (a Attach) ServeDialBack(ctx context.Context, conn net.Conn, rw *bufio.ReadWriter) {
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + DialBackUpgrade + "\r\n\r\n")
	c := &dialBackClient{enc: json.NewEncoder(rw), flush: rw.Flush, done: make(chan struct{})}
	a.Hub.attach(a.User, a.ID, c)
	defer a.Hub.detach(a.User, a.ID, c)
	var res protocol.AttachTerminalResult
	if err := a.Exe.Call(ctx, protocol.MethodAttachTerminal, protocol.TerminalIDParams{TerminalID: a.ID}, &res); err != nil {
		c.mu.Lock()
		_ = c.enc.Encode(apiwire.AttachError{Error: err.Error()})
		_ = rw.Flush()
		c.mu.Unlock()
		return
	}
	c.start(res)
	a.pump(ctx, rw.Reader, c, conn)
}

// pump carries the client's frames to the executor until the client
// detaches or goes, or the shell exits.
func (a Attach) pump(ctx context.Context, rd *bufio.Reader, c *dialBackClient, conn net.Conn) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-c.done: // the shell exited: end the client's side too
			if cr, ok := conn.(interface{ CloseRead() error }); ok {
				_ = cr.CloseRead()
			}
		case <-stop:
		}
	}()
	dec := json.NewDecoder(rd)
	input := func(p []byte) {
		_ = a.Exe.Notify(protocol.MethodTerminalInput, protocol.TerminalInputParams{TerminalID: a.ID, Data: p})
	}
	for {
		var f apiwire.Frame
		if err := dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				a.log().Debug("terminal client ended", "terminal", a.ID, "err", err)
			}
			return
		}
		if !control(ctx, a.Exe, a.ID, controlOf(f), input) {
			return
		}
	}
}

// controlOf is an NDJSON frame as the raw stream's Control.
func controlOf(f apiwire.Frame) rawframe.Control {
	c := rawframe.Control{Input: f.Input, Terminate: f.Terminate, Detach: f.Detach}
	if f.Resize != nil {
		c.Cols, c.Rows = f.Resize[0], f.Resize[1]
	}
	return c
}

var _ attached = (*dialBackClient)(nil)
