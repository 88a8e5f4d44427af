package terminal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// handoffWait bounds how long the executor waits for the client's
// connection after its reply, and how long a last frame may take.
const handoffWait = 10 * time.Second

// msgConn is the daemon's connection as the executor's raw route hands it
// over: a unix socket, read through a buffer that must be empty when the
// client's descriptor is received, or the message carrying it was read
// as plain bytes and its descriptor dropped.
type msgConn interface {
	net.Conn
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
	Buffered() int
}

// handed is an API client's connection that the daemon handed over: the
// terminal's output goes to it as raw frames, its end as the last frame,
// and the client's frames come from it, with no relay in between.
type handed struct {
	*net.UnixConn
	rd *bufio.Reader // what the daemon had read of the client, then the socket

	mu  sync.Mutex
	why string // how the executor ended the stream ("exit", "replaced")
}

// Write sends p as one output frame.
func (h *handed) Write(p []byte) (int, error) {
	if err := rawframe.Write(h.UnixConn, rawframe.Output, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// end writes the stream's last frame, bounded in time (the client may
// have stopped reading), and closes the connection.
func (h *handed) end(typ byte, payload []byte, why string) {
	h.mu.Lock()
	h.why = why
	h.mu.Unlock()
	_ = h.SetWriteDeadline(time.Now().Add(handoffWait))
	_ = rawframe.Write(h.UnixConn, typ, payload)
	_ = h.Close()
}

func (h *handed) reason(pumped string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.why != "" {
		return h.why
	}
	return pumped
}

// endReplaced closes a raw stream that a newer attach took over; a handed
// client is told why.
func endReplaced(c net.Conn) {
	if h, ok := c.(*handed); ok {
		h.end(rawframe.Error, []byte(rawframe.Replaced), "replaced")
		return
	}
	_ = c.Close()
}

// endExited closes a raw stream after the terminal's last output; a
// handed client gets the exit as its last frame.
func endExited(c net.Conn, ex protocol.TerminalExit) {
	if h, ok := c.(*handed); ok {
		b, _ := json.Marshal(ex)
		h.end(rawframe.Exit, b, "exit")
		return
	}
	_ = c.Close()
}

// serveHanded serves an attach_terminal_raw with Handoff: the reply, then
// the client's connection from the daemon, then the client itself until
// its stream ends; the daemon hears how it went through status lines.
func (s *Service) serveHanded(p protocol.AttachTerminalRawParams, reply func(any, error) error, conn net.Conn) {
	t, err := s.lookup(p.TerminalID)
	var res protocol.AttachTerminalRawResult
	if err == nil {
		res, err = t.peekRaw(p.Offset)
	}
	if reply(res, err) != nil || err != nil {
		return
	}
	mc, ok := conn.(msgConn)
	if !ok {
		status(conn, protocol.RawHandoffStatus{Error: rpc.Errorf(rpc.CodeInternalError, "handoff", "this connection cannot carry a descriptor")})
		return
	}
	client, pending, err := receiveClient(mc)
	if err != nil {
		status(conn, protocol.RawHandoffStatus{Error: rpc.Errorf(rpc.CodeInvalidRequest, "handoff", "%v", err)})
		return
	}
	h := &handed{UnixConn: client, rd: bufio.NewReader(io.MultiReader(bytes.NewReader(pending), client))}
	if err := t.attachHanded(h, p.Offset); err != nil {
		_ = client.Close()
		status(conn, protocol.RawHandoffStatus{Error: asRPC(err)})
		return
	}
	status(conn, protocol.RawHandoffStatus{Upgraded: true})
	why := t.pumpFrames(h)
	t.detachRaw(h)
	status(conn, protocol.RawHandoffStatus{Ended: h.reason(why)})
}

func asRPC(err error) *rpc.Error {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e
	}
	return rpc.Errorf(rpc.CodeInternalError, "handoff", "%v", err)
}

// status writes one RawHandoffStatus line to the daemon.
func status(conn net.Conn, st protocol.RawHandoffStatus) {
	b, _ := json.Marshal(st)
	_ = conn.SetWriteDeadline(time.Now().Add(handoffWait))
	_, _ = conn.Write(append(b, '\n'))
}

// receiveClient takes the client's connection from the daemon: one
// message with the descriptor (SCM_RIGHTS) on a 4-byte length, then that
// many bytes the daemon had already read from the client.
func receiveClient(c msgConn) (*net.UnixConn, []byte, error) {
	if c.Buffered() != 0 {
		return nil, nil, errors.New("bytes before the client's descriptor")
	}
	_ = c.SetReadDeadline(time.Now().Add(handoffWait))
	defer c.SetReadDeadline(time.Time{})
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for a few: extra ones are closed
	n, oobn, flags, _, err := c.ReadMsgUnix(hdr[:], oob)
	if err != nil {
		return nil, nil, fmt.Errorf("read the client's descriptor: %w", err)
	}
	fd, err := oneSocket(oob[:oobn], flags)
	if err != nil {
		return nil, nil, err
	}
	client, err := socketConn(fd)
	if err != nil {
		return nil, nil, err
	}
	pending, err := readPending(c, hdr[:], n)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return client, pending, nil
}

// readPending completes the length (n of its 4 bytes came with the
// descriptor) and reads the bytes it announces.
func readPending(r io.Reader, hdr []byte, n int) ([]byte, error) {
	if _, err := io.ReadFull(r, hdr[n:]); err != nil {
		return nil, fmt.Errorf("read the handoff header: %w", err)
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > protocol.RawHandoffMax {
		return nil, fmt.Errorf("handoff carries %d bytes: more than %d", size, protocol.RawHandoffMax)
	}
	pending := make([]byte, size)
	if _, err := io.ReadFull(r, pending); err != nil {
		return nil, fmt.Errorf("read the client's first bytes: %w", err)
	}
	return pending, nil
}

// oneSocket returns the single descriptor a control message carries,
// closing any others; it must be a socket.
func oneSocket(oob []byte, flags int) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, fmt.Errorf("handoff control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return -1, fmt.Errorf("handoff carries %d descriptors, want 1", len(fds))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		_ = unix.Close(fds[0])
		return -1, errors.New("the handed descriptor is not a socket")
	}
	return fds[0], nil
}

func socketConn(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "client")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("the handed socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("the handed socket is not a unix socket")
	}
	return uc, nil
}

// peekRaw is the reply to a handoff's request: what an attach from offset
// would replay now, without attaching (that waits for the client).
func (t *term) peekRaw(offset int64) (protocol.AttachTerminalRawResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return protocol.AttachTerminalRawResult{}, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "terminal %q has exited", t.id)
	}
	if offset > t.off {
		return protocol.AttachTerminalRawResult{}, rpc.InvalidParams("offset", "past the terminal's output")
	}
	start := max(offset, t.off-int64(t.ring.Len()))
	return protocol.AttachTerminalRawResult{TerminalID: t.id, PID: t.cmd.Process.Pid, Cols: t.cols, Rows: t.rows, Offset: start, End: t.off}, nil
}

// attachHanded makes h the terminal's raw stream: the 101 reply with the
// replay's offset, then the replay, before any live output can be.
func (t *term) attachHanded(h *handed, offset int64) error {
	t.mu.Lock()
	old := t.raw
	t.mu.Unlock()
	if old != nil {
		endReplaced(old)
	}
	t.outMu.Lock()
	defer t.outMu.Unlock()
	res, replay, err := t.takeRaw(h, offset)
	if err != nil {
		return err
	}
	_ = h.SetWriteDeadline(time.Now().Add(handoffWait))
	err = rawframe.WriteUpgrade(h.UnixConn, res.Offset)
	if err == nil && len(replay) > 0 {
		_, err = h.Write(replay)
	}
	_ = h.SetWriteDeadline(time.Time{})
	if err != nil {
		t.detachRaw(h)
	}
	return nil
}

// pumpFrames serves the client's frames until it detaches or goes, or
// the executor ended its stream (which closed h).
func (t *term) pumpFrames(h *handed) string {
	var buf []byte
	for {
		typ, p, err := rawframe.Read(h.rd, &buf)
		if err != nil {
			return "client_gone"
		}
		c, ok := rawframe.Decode(typ, p)
		switch {
		case !ok:
		case c.Detach:
			return "detached"
		case c.Input != nil:
			// Written here, not through the writer goroutine: one handoff
			// less before a keystroke's echo. A failed write means the
			// shell has gone; its exit frame follows.
			_, _ = t.master.Write(c.Input)
		default:
			_ = t.control(c)
		}
	}
}
