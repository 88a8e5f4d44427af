package terminal

import (
	"context"
	"encoding/json"
	"net"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ServeRaw serves attach_terminal_raw, the first request of conn: the
// reply, then the scrollback from the asked offset and the live output
// as bare bytes on conn; what conn sends is the terminal's input. It
// returns when either side is done: the peer closed or went, another
// attach took the terminal over, or the shell exited (after the last
// output; terminal_exit goes to the terminal's JSON-RPC connection).
func (s *Service) ServeRaw(_ context.Context, params json.RawMessage, reply func(any, error) error, conn net.Conn) {
	var p protocol.AttachTerminalRawParams
	err := rpc.Bind(params, &p)
	if err == nil && p.Handoff {
		s.serveHanded(p, reply, conn)
		return
	}
	var t *term
	if err == nil {
		t, err = s.lookup(p.TerminalID)
	}
	if err == nil {
		err = t.attachRaw(conn, p.Offset, reply)
	}
	if err != nil {
		_ = reply(nil, err)
		return
	}
	defer t.detachRaw(conn)
	t.pumpInput(conn)
}

// attachRaw makes conn the terminal's output, after its reply and the
// replay from offset, written before any live output can be.
func (t *term) attachRaw(conn net.Conn, offset int64, reply func(any, error) error) error {
	t.mu.Lock()
	old := t.raw
	t.mu.Unlock()
	if old != nil {
		endReplaced(old) // a write stalled on it lets go of outMu; its reader detaches it
	}
	t.outMu.Lock()
	defer t.outMu.Unlock()
	res, replay, err := t.takeRaw(conn, offset)
	if err != nil {
		return err
	}
	if reply(res, nil) != nil {
		t.detachRaw(conn)
		return nil
	}
	if _, err := conn.Write(replay); err != nil {
		t.detachRaw(conn)
	}
	return nil
}

// takeRaw attaches conn and returns the reply and what to replay.
func (t *term) takeRaw(conn net.Conn, offset int64) (protocol.AttachTerminalRawResult, []byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return protocol.AttachTerminalRawResult{}, nil, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "terminal %q has exited", t.id)
	}
	if offset > t.off {
		return protocol.AttachTerminalRawResult{}, nil, rpc.InvalidParams("offset", "past the terminal's output")
	}
	if t.raw != nil { // attached meanwhile by another
		endReplaced(t.raw)
	}
	if t.grace != nil {
		t.grace.Stop()
		t.grace = nil
	}
	t.raw = conn
	// The newest attach wins, as in attachTo: the JSON-RPC connection that
	// spawned or attached before (the daemon's, which lives on) keeps only
	// terminal_exit, so that once this stream goes the terminal is listed
	// detached and its grace period runs.
	t.exitOnly = t.conn != nil
	replay := quiet(t.ring.Bytes()) // its questions to a terminal long gone
	start := t.off - int64(len(replay))
	if offset > start {
		replay, start = replay[offset-start:], offset
	}
	res := protocol.AttachTerminalRawResult{TerminalID: t.id, PID: t.cmd.Process.Pid, Cols: t.cols, Rows: t.rows, Offset: start, End: t.off}
	return res, replay, nil
}

// detachRaw forgets conn as the raw stream (if it still is) and closes it.
func (t *term) detachRaw(conn net.Conn) {
	_ = conn.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.raw != conn || t.finished {
		return
	}
	t.raw = nil
	t.idleLocked()
}

// pumpInput passes what conn sends to the program until conn ends,
// writing to the PTY itself rather than through the writer goroutine: one
// handoff less before a keystroke's echo. A program that leaves its input
// unread holds this write, and so the sender.
func (t *term) pumpInput(conn net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := t.master.Write(buf[:n]); werr != nil {
				return // closed: the shell has exited
			}
		}
		if err != nil {
			return
		}
	}
}
