package gateway

import (
	"bytes"
	"fmt"
	"mime"
)

// extractor reads usage from a response body as it is relayed: the body
// is written to it in whatever pieces the provider sent, and it holds no
// more than its finder does.
type extractor struct {
	api   API
	usage Usage
	whole bool // the answer's last usage report was seen
	find  *finder
	sse   *events // nil: the body is JSON (one document, or an array stream)
}

func newExtractor(api API, sse bool) *extractor {
	x := &extractor{api: api}
	x.find = newFinder(usagePaths[api], x.found)
	if sse {
		x.sse = &events{doc: x.find}
	}
	return x
}

// isSSE says whether a Content-Type is server-sent events.
func isSSE(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

func (x *extractor) found(path int, raw []byte) {
	apply(x.api, raw, &x.usage)
	x.whole = x.whole || lastReport[x.api][path]
}

// Write takes the next piece of the body; it never fails.
func (x *extractor) Write(p []byte) (int, error) {
	if x.sse != nil {
		return x.sse.Write(p)
	}
	return x.find.Write(p)
}

// result is the usage seen so far, and an error when a usage object was
// too large to read (the count may then be short).
func (x *extractor) result() (Usage, error) {
	if n := x.find.skipped; n > 0 {
		return x.usage, fmt.Errorf("%d usage objects over %d bytes not read", n, maxCapture)
	}
	return x.usage, nil
}

// events splits a server-sent event stream and feeds the data of each
// event to doc as one JSON document, resetting it between events. Lines
// are never held: a data line goes to doc as it arrives, and of other
// lines only the first bytes are looked at, to tell their field.
type events struct {
	doc     *finder
	state   int  // where in a line (lineStart, inData, skipLine)
	n       int  // bytes of "data:" matched at the start of a line
	cr      bool // the line so far is a carriage return
	space   bool // next comes the optional space after "data:"
	hasData bool // the event so far has a data line
}

const (
	lineStart = iota // reading a line's field name
	inData           // in a data line's value
	skipLine         // in a line that is not data
)

const dataField = "data:"

func (e *events) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if e.state == lineStart {
			e.fieldByte(p[0])
			p = p[1:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		line := p
		if i >= 0 {
			line = p[:i]
		}
		if e.state == inData {
			e.data(line)
		}
		if i < 0 {
			break
		}
		e.state, e.n, e.cr = lineStart, 0, false
		p = p[i+1:]
	}
	return n, nil
}

// fieldByte takes one byte at the start of a line.
func (e *events) fieldByte(c byte) {
	switch {
	case c == '\n':
		if e.n == 0 { // a blank line (maybe "\r\n"): the event ends
			e.end()
		}
		e.n, e.cr = 0, false
	case c == '\r' && e.n == 0 && !e.cr:
		e.cr = true
	case !e.cr && e.n < len(dataField) && c == dataField[e.n]:
		e.n++
		if e.n == len(dataField) {
			e.state, e.space = inData, true
			if e.hasData { // data lines of one event join with a newline
				_, _ = e.doc.Write([]byte{'\n'})
			}
			e.hasData = true
		}
	default:
		e.state = skipLine
	}
}

func (e *events) data(b []byte) {
	if e.space && len(b) > 0 {
		e.space = false
		if b[0] == ' ' {
			b = b[1:]
		}
	}
	_, _ = e.doc.Write(b)
}

func (e *events) end() {
	if e.hasData {
		e.doc.reset()
		e.hasData = false
	}
}
