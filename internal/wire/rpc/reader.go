package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// prefixKeep is how much of an over-long line is kept to find its id.
const prefixKeep = 4 << 10

// errLineTooLong reports a line past the limit; the line has been consumed.
var errLineTooLong = errors.New("rpc: line too long")

// lineReader splits a stream into lines without ever holding more than
// max bytes of one line: an over-long line is skipped as it streams past,
// keeping only its first prefixKeep bytes.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte // assembles lines longer than br's buffer
	long []byte // prefix of the last over-long line
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next non-empty line without its terminator. The slice is
// valid until the following call. At a line past the limit it returns
// errLineTooLong; prefix() then holds its start.
func (lr *lineReader) next() ([]byte, error) {
	for {
		line, err := lr.readLine()
		if err != nil {
			return nil, err
		}
		if line = bytes.TrimRight(line, "\r"); len(line) > 0 {
			return line, nil
		}
	}
}

func (lr *lineReader) readLine() ([]byte, error) {
	chunk, err := lr.br.ReadSlice('\n')
	if err == nil {
		if len(chunk)-1 > lr.max { // bufio raises tiny buffers to 16 bytes
			lr.long = append(lr.long[:0], chunk...)
			return nil, errLineTooLong
		}
		return chunk[:len(chunk)-1], nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if errors.Is(err, io.EOF) && len(chunk) > 0 {
			return nil, io.ErrUnexpectedEOF // a partial last line is not a message
		}
		return nil, err
	}
	lr.buf = append(lr.buf[:0], chunk...)
	return lr.assemble()
}

// assemble reads the rest of a line that did not fit in the buffer.
func (lr *lineReader) assemble() ([]byte, error) {
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > lr.max+1 {
			return nil, lr.skip(err)
		}
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			return lr.buf[:len(lr.buf)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, unexpected(err)
		}
	}
}

// skip discards the remainder of an over-long line.
func (lr *lineReader) skip(err error) error {
	keep := lr.buf
	if len(keep) > prefixKeep {
		keep = keep[:prefixKeep]
	}
	lr.long = append(lr.long[:0], keep...)
	lr.buf = lr.buf[:0]
	if cap(lr.buf) > 2*prefixKeep+(64<<10) {
		lr.buf = nil // do not pin a megabyte per idle connection
	}
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = lr.br.ReadSlice('\n')
	}
	if err != nil {
		return unexpected(err)
	}
	return errLineTooLong
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (lr *lineReader) prefix() []byte { return lr.long }

// hasLine reports whether a whole line is buffered: next will not block.
func (lr *lineReader) hasLine() bool {
	n := lr.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := lr.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// sniffed is what can be told about an over-long line from its prefix.
type sniffed struct {
	id       json.RawMessage // nil when not seen before the cut
	isMethod bool            // a "method" member was seen
	isBatch  bool
}

// sniff walks the top-level members of a truncated object until the cut.
// Our own encoder writes "jsonrpc", "id", "method" before "params", so a
// compliant peer's over-long request is always answered with its id.
func sniff(prefix []byte) sniffed {
	var s sniffed
	dec := json.NewDecoder(bytes.NewReader(prefix))
	tok, err := dec.Token()
	if err != nil {
		return s
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		s.isBatch = ok && d == '['
		return s
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return s
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return s
		}
		switch key {
		case "id":
			if validID(v) {
				s.id = v
			}
		case "method":
			s.isMethod = true
		}
	}
	return s
}
