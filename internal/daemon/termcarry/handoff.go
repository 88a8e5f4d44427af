package termcarry

import (
	"bufio"
	bin "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// A raw terminal stream on the API's unix socket is not relayed: the
// daemon hands the client's connection to the executor (SCM_RIGHTS),
// which then serves the client itself, so a keystroke and its echo cross
// no process but the executor on their way to and from the PTY. The
// daemon keeps its copy of the connection only to answer the client
// should the executor fail it, and closes it when the executor says the
// stream ended. A TLS client (bytes the daemon must decrypt) is relayed
// as before.

// Status lines are the executor's word, and its user's: it writes three
// at most (upgraded, then ended or an error), each a few hundred bytes.
// Reading stops past these bounds, so a line without end or an endless
// run of lines cannot grow the daemon.
const (
	maxStatusLine  = 4096
	maxStatusLines = 16
)

// HandOver passes the client's connection conn (client, the unix socket
// under it), with what was read of it past the request (crd), to the
// executor, then waits for the executor's status lines. The error it
// returns, when the executor could not serve the client or went away
// before it began, is the client's HTTP answer, for the caller to write;
// the caller closes conn.
func (r *Raw) HandOver(conn net.Conn, client *net.UnixConn, crd *bufio.Reader) error {
	pending, _ := crd.Peek(crd.Buffered())
	if err := sendClient(r.conn, client, pending); err != nil {
		return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonConnectFailed, "hand the terminal's stream to the executor: %v", err)
	}
	upgraded := false
	for n := 0; ; n++ {
		st, err := readStatus(r.rd, n)
		if errors.Is(err, errBadStatus) {
			r.a.log().Warn("terminal handoff: the executor's status is over its bounds; letting the stream go", "terminal", r.a.ID, "err", err)
			if !upgraded { // once upgraded, the stream is the executor's to end
				return rpc.Errorf(protocol.CodeExecutorUnavailable, "bad_reply", "terminal handoff: %v", err)
			}
			return nil
		}
		if err != nil {
			break
		}
		switch {
		case st.Error != nil:
			return st.Error
		case st.Ended != "":
			r.a.log().Debug("terminal stream ended", "terminal", r.a.ID, "how", st.Ended)
			return nil
		case st.Upgraded:
			upgraded = true
		}
	}
	if upgraded {
		_ = rawframe.Write(conn, rawframe.Error, []byte("the executor's connection ended"))
		return nil
	}
	return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonConnectFailed, "the executor ended the terminal's stream before it started")
}

var errBadStatus = errors.New("status out of bounds")

// readStatus reads the n-th status line (counting from 0); a line that
// is not a status reads as an empty one.
func readStatus(rrd *bufio.Reader, n int) (protocol.RawHandoffStatus, error) {
	var st protocol.RawHandoffStatus
	if n >= maxStatusLines {
		return st, fmt.Errorf("%w: more than %d lines", errBadStatus, maxStatusLines)
	}
	line, err := readLine(rrd, maxStatusLine)
	if err != nil {
		return st, err
	}
	_ = json.Unmarshal(line, &st)
	return st, nil
}

// readLine reads one line of at most limit bytes, keeping no more than that.
func readLine(rd *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		part, err := rd.ReadSlice('\n')
		if len(line)+len(part) > limit {
			return nil, fmt.Errorf("%w: a line over %d bytes", errBadStatus, limit)
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// sendClient writes the handoff message: the client's descriptor on a
// 4-byte length, then that many bytes already read from the client.
func sendClient(raw, client *net.UnixConn, pending []byte) error {
	if client == nil {
		return errors.New("not a unix socket")
	}
	if len(pending) > protocol.RawHandoffMax {
		return fmt.Errorf("%d bytes read ahead of the stream", len(pending))
	}
	msg := bin.BigEndian.AppendUint32(nil, uint32(len(pending)))
	msg = append(msg, pending...)
	sc, err := client.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	if err := sc.Control(func(fd uintptr) { n, _, werr = raw.WriteMsgUnix(msg, unix.UnixRights(int(fd)), nil) }); err != nil {
		return err
	}
	if werr == nil && n < len(msg) {
		_, werr = raw.Write(msg[n:])
	}
	return werr
}
