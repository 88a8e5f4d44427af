package termcarry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// exitWait bounds how long a raw stream that the executor ended waits
// for the terminal_exit that follows it on the JSON-RPC connection.
const exitWait = 10 * time.Second

// rawClient is a client attached in raw mode. Its output never passes
// through the daemon's JSON-RPC handling; only the exit and a takeover
// reach it here.
type rawClient struct {
	exitC chan protocol.TerminalExit // buffered: the one exit
	gone  chan struct{}              // closed when a newer attach took over
	once  sync.Once
}

var _ attached = (*rawClient)(nil)

func newRawClient() *rawClient {
	return &rawClient{exitC: make(chan protocol.TerminalExit, 1), gone: make(chan struct{})}
}

func (c *rawClient) output(protocol.TerminalOutput) {} // between the two attaches: the raw replay has it

func (c *rawClient) exit(e protocol.TerminalExit) {
	select {
	case c.exitC <- e:
	default:
	}
}

func (c *rawClient) replaced() { c.once.Do(func() { close(c.gone) }) }

// Dial opens a connection of user's executor's own, beside the shared
// one (the pool's DialRaw).
type Dial func(ctx context.Context, user string) (*net.UnixConn, error)

// Raw is a terminal's raw stream, opened on a connection of the
// executor's own for one client: served with HandOver when Handoff is
// set, else with Relay.
type Raw struct {
	a      Attach
	rc     *rawClient
	conn   *net.UnixConn
	rd     *bufio.Reader
	offset int64 // where the stream starts, as far as the scrollback reaches
	// Handoff is whether the executor takes the client's connection.
	Handoff bool
}

// OpenRaw binds the terminal's exit to the shared JSON-RPC connection (an
// attach_terminal there, whose scrollback goes unused), then opens the
// terminal's raw stream from offset (attach_terminal_raw) on a connection
// of its own, asking for a handoff when handoff is set. An executor from
// before handoffs refuses one, and is asked again without. The caller
// closes the Raw.
func (a Attach) OpenRaw(ctx context.Context, dial Dial, offset int64, handoff bool) (*Raw, error) {
	r := &Raw{a: a, rc: newRawClient(), Handoff: handoff}
	a.Hub.attach(a.User, a.ID, r.rc)
	err := a.Exe.Call(ctx, protocol.MethodAttachTerminal, protocol.TerminalIDParams{TerminalID: a.ID}, nil)
	if err == nil {
		err = r.dial(ctx, dial, offset)
		if r.Handoff && isInvalidParams(err) { // an executor from before handoffs, still running
			r.Handoff = false
			err = r.dial(ctx, dial, offset)
		}
	}
	if err != nil {
		a.Hub.detach(a.User, a.ID, r.rc)
		return nil, err
	}
	return r, nil
}

// Close ends the executor's stream and the attach.
func (r *Raw) Close() {
	_ = r.conn.Close()
	r.a.Hub.detach(r.a.User, r.a.ID, r.rc)
}

func isInvalidParams(err error) bool {
	var e *rpc.Error
	return errors.As(err, &e) && e.Code == rpc.CodeInvalidParams
}

// dial opens the executor's raw stream of the terminal from offset.
func (r *Raw) dial(ctx context.Context, dial Dial, offset int64) error {
	var res protocol.AttachTerminalRawResult
	c, err := dial(ctx, r.a.User)
	if err != nil {
		return err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReaderSize(c, 64<<10)
	params := protocol.AttachTerminalRawParams{TerminalID: r.a.ID, Offset: offset, Handoff: r.Handoff}
	if err = rpc.WriteRequest(c, 1, protocol.MethodAttachTerminalRaw, params); err == nil {
		err = readRawReply(rd, &res)
	}
	if err != nil {
		c.Close()
		return err
	}
	_ = c.SetDeadline(time.Time{})
	r.conn, r.rd, r.offset = c, rd, res.Offset
	return nil
}

// readRawReply reads the executor's answer to attach_terminal_raw: its
// error as it worded it, a reply that is not one as bad_reply, a
// connection that fails as the executor being unavailable.
func readRawReply(rd *bufio.Reader, res *protocol.AttachTerminalRawResult) error {
	err := rpc.ReadResult(rd, res)
	var e *rpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, rpc.ErrBadResponse):
		return rpc.Errorf(rpc.CodeInternalError, "bad_reply", "attach_terminal_raw reply: %v", err)
	}
	return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonConnectFailed, "attach_terminal_raw: %v", err)
}

// Relay serves the client on conn, taken from the HTTP server (rw is what
// it had buffered): it writes the 101 reply, then copies the executor's
// bytes to the client as output frames and the client's input frames
// there as bare bytes; resize and terminate go over JSON-RPC. The caller
// closes conn.
func (r *Raw) Relay(ctx context.Context, conn net.Conn, rw *bufio.ReadWriter) {
	if rawframe.WriteUpgrade(rw, r.offset) != nil || rw.Flush() != nil {
		return
	}
	sp := &splice{log: r.a.log(), exe: r.a.Exe, id: r.a.ID, rc: r.rc, client: conn, raw: r.conn}
	sp.run(ctx, rw.Reader, r.rd)
}

// splice carries one relayed raw attach: output from the executor to the
// client in its own goroutine, the client's frames in the caller's.
type splice struct {
	log    *slog.Logger
	exe    *rpc.Client
	id     string
	rc     *rawClient
	client net.Conn
	raw    net.Conn
	left   atomic.Bool // the client detached or went: no exit to wait for
}

func (sp *splice) run(ctx context.Context, crd *bufio.Reader, rrd *bufio.Reader) {
	out := make(chan struct{})
	go func() { defer close(out); sp.output(rrd) }()
	sp.input(ctx, crd)
	sp.left.Store(true)
	_ = sp.raw.Close() // ends output's copy, if the executor has not
	<-out
}

// output copies the executor's bytes to the client as output frames; when
// the executor ends the stream, the exit (or why it ended) is the last
// frame, and reading the client's side ends so that input returns.
func (sp *splice) output(rrd *bufio.Reader) {
	buf := make([]byte, 5+64<<10) // read behind room for the frame header: one write a frame
	for {
		n, err := rrd.Read(buf[5:])
		if n > 0 && rawframe.PutHeader(buf, rawframe.Output, n) != nil {
			return
		}
		if n > 0 {
			if _, werr := sp.client.Write(buf[:5+n]); werr != nil {
				return
			}
		}
		if err != nil {
			break
		}
	}
	if sp.left.Load() {
		return
	}
	sp.finish()
	_ = sp.client.SetReadDeadline(time.Now()) // input returns (any conn, TLS too)
}

// finish sends the terminal's exit, which follows the end of its output
// on the JSON-RPC connection, or why the stream ended without one.
func (sp *splice) finish() {
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	var why string
	select {
	case e := <-sp.rc.exitC:
		b, _ := json.Marshal(e)
		_ = rawframe.Write(sp.client, rawframe.Exit, b)
		return
	case <-sp.rc.gone:
		why = rawframe.Replaced
	case <-sp.exe.Done():
		why = "the executor's connection ended"
	case <-timer.C:
		why = "the executor ended the terminal's stream"
	}
	_ = rawframe.Write(sp.client, rawframe.Error, []byte(why))
}

// writeRaw passes keystrokes on the executor's raw stream. A failed write
// means the executor ended the stream: output then sends the exit and
// ends input.
func (sp *splice) writeRaw(p []byte) { _, _ = sp.raw.Write(p) }

// input passes the client's frames on until it detaches or goes.
func (sp *splice) input(ctx context.Context, crd *bufio.Reader) {
	var buf []byte
	for {
		typ, p, err := rawframe.Read(crd, &buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				sp.log.Debug("terminal client ended", "terminal", sp.id, "err", err)
			}
			return
		}
		c, ok := rawframe.Decode(typ, p)
		if ok && !control(ctx, sp.exe, sp.id, c, sp.writeRaw) {
			return
		}
	}
}
