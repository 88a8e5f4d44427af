package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
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

// rawTerminal serves Upgrade: agor-terminal-raw. The executor's
// terminal_exit is bound to the daemon's JSON-RPC connection (an
// attach_terminal there, whose scrollback goes unused), then a
// connection of its own to the executor carries the terminal's bytes
// (attach_terminal_raw), copied to the client as output frames; the
// client's input frames go there as bare bytes; resize and terminate go
// over JSON-RPC.
func (s *Server) rawTerminal(w http.ResponseWriter, r *http.Request, exe *rpc.Client, user, id string) {
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if r.URL.Query().Get("offset") == "" {
		offset, err = 0, nil
	}
	if err != nil || offset < 0 {
		writeError(w, rpc.InvalidParams("offset", "must be a byte count"))
		return
	}
	rc := newRawClient()
	s.Terminals.attach(user, id, rc)
	defer s.Terminals.detach(user, id, rc)
	if err := exe.Call(r.Context(), protocol.MethodAttachTerminal, protocol.TerminalIDParams{TerminalID: id}, nil); err != nil {
		writeError(w, err)
		return
	}
	handoff := handOffable(r.Context())
	raw, rrd, res, err := s.dialRaw(r.Context(), user, id, offset, handoff)
	if handoff && isInvalidParams(err) { // an executor from before handoffs, still running
		handoff = false
		raw, rrd, res, err = s.dialRaw(r.Context(), user, id, offset, false)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	defer raw.Close()
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, err)
		return
	}
	defer conn.Close()
	if handoff {
		s.metrics.rawStream("handoff")
		s.handOff(conn, rw.Reader, raw, rrd, id)
		return
	}
	s.metrics.rawStream("relay")
	if rawframe.WriteUpgrade(rw, res.Offset) != nil || rw.Flush() != nil {
		return
	}
	sp := &splice{s: s, exe: exe, id: id, rc: rc, client: conn, raw: raw}
	sp.run(r.Context(), rw.Reader, rrd)
}

// dialRaw opens the executor's raw stream of terminal id from offset.
func (s *Server) dialRaw(ctx context.Context, user, id string, offset int64, handoff bool) (*net.UnixConn, *bufio.Reader, protocol.AttachTerminalRawResult, error) {
	var res protocol.AttachTerminalRawResult
	c, err := s.Pool.DialRaw(ctx, user)
	if err != nil {
		return nil, nil, res, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	rd := bufio.NewReaderSize(c, 64<<10)
	params := protocol.AttachTerminalRawParams{TerminalID: id, Offset: offset, Handoff: handoff}
	if err = rpc.WriteRequest(c, 1, protocol.MethodAttachTerminalRaw, params); err == nil {
		err = readRawReply(rd, &res)
	}
	if err != nil {
		c.Close()
		return nil, nil, res, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, rd, res, nil
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

// splice carries one raw attach: output from the executor to the client
// in its own goroutine, the client's frames in the caller's.
type splice struct {
	s      *Server
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
		why = "the terminal was attached elsewhere"
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
				sp.s.log().Debug("terminal client ended", "terminal", sp.id, "err", err)
			}
			return
		}
		c, ok := rawframe.Decode(typ, p)
		if ok && !control(ctx, sp.exe, sp.id, c, sp.writeRaw) {
			return
		}
	}
}
