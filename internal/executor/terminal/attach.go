package terminal

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Attaching a terminal to a connection, detaching, and the grace period
// of one that nothing is attached to.

// attachTo makes conn the terminal's connection. protocol.TerminalOutput from Seq on goes
// to conn, but only after ctx (the attaching request's) ends: the rpc
// package ends a handler's context once its reply is written, so the
// reply, with the scrollback up to Seq, leaves before any live output.
func (t *term) attachTo(ctx context.Context, conn *rpc.Conn) (protocol.AttachTerminalResult, error) {
	gate := make(chan struct{})
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return protocol.AttachTerminalResult{}, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "terminal %q has exited", t.id)
	}
	if t.grace != nil {
		t.grace.Stop()
		t.grace = nil
	}
	t.conn, t.gate, t.exitOnly = conn, gate, false
	if t.raw != nil { // the newest attach wins; the scrollback below has what the raw stream missed
		endReplaced(t.raw)
		t.raw = nil
	}
	res := protocol.AttachTerminalResult{
		TerminalID: t.id, PID: t.cmd.Process.Pid, Cols: t.cols, Rows: t.rows,
		Scrollback: quiet(t.ring.Bytes()), Seq: t.seq,
	}
	t.wg.Add(1) // under mu with finished false: before finish's Wait
	t.mu.Unlock()
	context.AfterFunc(ctx, func() { close(gate) })
	go t.watch(conn)
	return res, nil
}

// watch detaches conn when it ends.
func (t *term) watch(conn *rpc.Conn) {
	defer t.wg.Done()
	select {
	case <-conn.Done():
		t.detach(conn)
	case <-t.done:
	}
}

// detach leaves the terminal running with output going only to the
// scrollback; unattached for DetachGrace, it is terminated.
func (t *term) detach(conn *rpc.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished || t.conn != conn {
		return
	}
	t.conn, t.gate, t.exitOnly = nil, nil, false
	t.idleLocked()
}

// attachedLocked: a raw stream, or a connection that gets the output.
func (t *term) attachedLocked() bool {
	return t.raw != nil || (t.conn != nil && !t.exitOnly)
}

// idleLocked starts the grace period once nothing is attached.
func (t *term) idleLocked() {
	if t.attachedLocked() || t.grace != nil {
		return
	}
	t.grace = time.AfterFunc(t.cfg.DetachGrace, t.abandon)
	t.cfg.Logger.Info("terminal detached", "terminal_id", t.id, "grace", t.cfg.DetachGrace)
}

func (t *term) abandon() {
	t.mu.Lock()
	idle := !t.attachedLocked() && !t.finished
	t.mu.Unlock()
	if idle {
		t.cfg.Logger.Info("terminal abandoned", "terminal_id", t.id)
		t.terminate()
	}
}
