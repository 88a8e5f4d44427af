// Package rawframe is the framing of a terminal's raw stream, spoken by
// agorctl, the daemon's API and the executor that a stream is handed to:
// a type byte, a 4-byte big-endian length and the payload, both ways.
package rawframe

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// Upgrade is the Upgrade token of a terminal's raw stream:
// both ways a sequence of frames, each a type byte, the payload's length
// (4 bytes, big-endian) and the payload. Output travels as the PTY's own
// bytes, without JSON or base64; the older "agor-terminal" NDJSON stream
// of Frames is still served.
const Upgrade = "agor-terminal-raw"

// Frame types of the raw stream. A reader skips types it does not know.
const (
	Output    byte = 'o' // daemon → client: terminal output
	Exit      byte = 'x' // daemon → client, last: a protocol.TerminalExit in JSON
	Error     byte = 'e' // daemon → client, last: why the stream ends, as text
	Input     byte = 'i' // client → daemon: keystrokes
	Resize    byte = 'r' // client → daemon: cols, rows (2 bytes each, big-endian)
	Detach    byte = 'd' // client → daemon: leave the terminal running
	Terminate byte = 't' // client → daemon: end the shell
)

// Replaced is the Error frame of a stream whose terminal another client
// has attached to since (the newest attach wins): the terminal runs on
// there, and this client must not attach again on its own, which would
// take it back and start a tug of war between the two.
const Replaced = "the terminal was attached elsewhere"

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// OffsetHeader, in the 101 reply, is the terminal's output offset of the
// stream's first byte: a client that counts what it received can resume
// there (?offset=N) after losing its connection.
const OffsetHeader = "Agor-Terminal-Offset"

// Write writes one frame, header and payload in one write when w
// is a connection (writev).
func Write(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("raw frame of %d bytes: more than %d", len(payload), MaxFrame)
	}
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	bufs := net.Buffers{h[:], payload}
	_, err := bufs.WriteTo(w)
	return err
}

// PutHeader writes the header of a frame of n payload bytes into
// b[:5], for a writer that reads the payload into b[5:] itself.
func PutHeader(b []byte, typ byte, n int) error {
	if n > MaxFrame {
		return fmt.Errorf("raw frame of %d bytes: more than %d", n, MaxFrame)
	}
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:5], uint32(n))
	return nil
}

// Read reads one frame into buf (grown as needed) and returns its
// type and payload, which is valid until the next call with buf.
func Read(r io.Reader, buf *[]byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("raw frame of %d bytes: more than %d", n, MaxFrame)
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	p := (*buf)[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}

// Size is a Resize payload.
func Size(cols, rows int) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, uint16(cols)), uint16(rows))
}

// ParseSize reads a Resize payload.
func ParseSize(p []byte) (cols, rows int, ok bool) {
	if len(p) != 4 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint16(p)), int(binary.BigEndian.Uint16(p[2:])), true
}

// WriteUpgrade writes the 101 reply that starts a raw stream whose
// first output byte is the terminal's offset: the daemon writes it when
// it relays the stream, the executor when the client's connection was
// handed to it.
func WriteUpgrade(w io.Writer, offset int64) error {
	_, err := fmt.Fprintf(w, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %d\r\n\r\n",
		Upgrade, OffsetHeader, offset)
	return err
}

// Control is what a client asks of its terminal in one frame: keystrokes,
// a new size, terminate, or detach. Every route from a client to a PTY
// (the raw stream handed to the executor or relayed by the daemon, and the
// NDJSON stream) decodes into it, so each side acts on a terminal in one
// place.
type Control struct {
	Input      []byte
	Cols, Rows int // a resize when Cols > 0
	Terminate  bool
	Detach     bool
}

// Decode reads a client's frame; ok is false for a frame a reader skips
// (a type it does not know, or a resize whose size does not parse).
func Decode(typ byte, p []byte) (c Control, ok bool) {
	switch typ {
	case Input:
		return Control{Input: p}, true
	case Resize:
		c.Cols, c.Rows, ok = ParseSize(p)
		return c, ok && c.Cols > 0
	case Terminate:
		return Control{Terminate: true}, true
	case Detach:
		return Control{Detach: true}, true
	}
	return c, false
}
