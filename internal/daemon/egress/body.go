package egress

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// drainWait bounds drainBody's reading of what a client still sends.
const drainWait = 5 * time.Second

// drainBody reads the rest of the request's body, when the transport
// did not (the answer came first). Under full duplex net/http reads an
// unread body's end only after it has stopped watching the connection
// (finishRequest); reaching the end starts that watch again, beside its
// read of the next request: "invalid concurrent Body.Read call", and the
// client's connection is dropped (TestPlainHTTPEachRequest, 92 of 500
// runs under load). Read here, the end is reached while the handler runs.
func drainBody(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(drainWait))
	_, _ = io.Copy(io.Discard, body)
	_ = rc.SetReadDeadline(time.Time{})
}

// sentBody is a request body that says when the transport is done with
// it: closed, and no Read in flight. The transport closes the body from
// its read side when the answer comes first, while its write side may
// still be inside a Read; that Read, finishing after the handler had
// returned, would race the server's read of the next request. A Read
// after Close never reaches the connection.
type sentBody struct {
	io.ReadCloser
	mu      sync.Mutex
	reading int
	closed  bool
	once    sync.Once
	done    chan struct{}
}

func (b *sentBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	}
	b.reading++
	b.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.reading--
	b.settle()
	b.mu.Unlock()
	return n, err
}

func (b *sentBody) Close() error {
	err := b.ReadCloser.Close()
	b.mu.Lock()
	b.closed = true
	b.settle()
	b.mu.Unlock()
	return err
}

// settle closes done once the body is closed and not being read; b.mu
// is held.
func (b *sentBody) settle() {
	if b.closed && b.reading == 0 {
		b.once.Do(func() { close(b.done) })
	}
}
