package egress

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/netpolicy"
)

type handler struct {
	s       *Service
	tunnels *tunnelSet
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := r.Context().Value(personKey{}).(Person)
	if !ok {
		http.Error(w, "agor egress: no peer credentials", http.StatusForbidden)
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		h.connect(w, r, p)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		h.forward(w, r, p)
	default:
		http.Error(w, "agor egress: this is a proxy: send CONNECT host:port, or a request for an absolute http:// URL", http.StatusBadRequest)
	}
}

// destination reads host and port from a request's authority; the port
// is required for CONNECT, 80 otherwise.
func destination(authority string, defaultPort uint16) (netpolicy.Destination, error) {
	host, ps, err := net.SplitHostPort(authority)
	if err != nil {
		if defaultPort == 0 {
			return netpolicy.Destination{}, fmt.Errorf("%q is not host:port", authority)
		}
		host, ps = strings.Trim(authority, "[]"), strconv.Itoa(int(defaultPort))
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || port == 0 {
		return netpolicy.Destination{}, fmt.Errorf("%q: bad port", authority)
	}
	if host == "" || len(host) > netpolicy.MaxNameLen {
		return netpolicy.Destination{}, fmt.Errorf("%q: bad host", authority)
	}
	return netpolicy.Destination{Host: host, Port: uint16(port)}, nil
}

// sessionOf is the session a request says it comes from: the proxy URL's
// user "session" with the session id as password, which agents' proxy
// variables carry. It is the person's own word, used only to label
// their records (the session must be theirs).
func sessionOf(r *http.Request) string {
	v, ok := strings.CutPrefix(r.Header.Get("Proxy-Authorization"), "Basic ")
	if !ok || len(v) > 256 {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	user, id, ok := strings.Cut(string(raw), ":")
	if !ok || user != "session" || len(id) == 0 || len(id) > 64 {
		return ""
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '_' || c == '-') {
			return ""
		}
	}
	return id
}

// decideOrRefuse answers a refused or unresolvable destination and
// audits it; ok means go on with t.
func (h *handler) decideOrRefuse(w http.ResponseWriter, r *http.Request, p Person, authority string, defaultPort uint16) (target, label, bool) {
	task := h.s.labelOf(r.Context(), p, sessionOf(r))
	dst, err := destination(authority, defaultPort)
	if err != nil {
		http.Error(w, "agor egress: "+err.Error(), http.StatusBadRequest)
		return target{}, task, false
	}
	t, err := h.s.decide(r.Context(), p, dst)
	if err != nil {
		t.allowed = true // decided by no rule: a failure, recorded as one
		h.s.record(p, task, t, 0, 0, err)
		http.Error(w, "agor egress: "+err.Error(), http.StatusBadGateway)
		return t, task, false
	}
	if !t.allowed {
		h.s.record(p, task, t, 0, 0, nil)
		w.Header().Set("X-Agor-Egress-Rule", t.rule)
		http.Error(w, fmt.Sprintf("agor egress: %s may not reach %s (%s; the network section of /etc/agor/config.yaml)",
			p.Name, net.JoinHostPort(dst.Host, strconv.Itoa(int(dst.Port))), t.rule), http.StatusForbidden)
		return t, task, false
	}
	return t, task, true
}

// connect serves CONNECT: a tunnel to the destination, bytes untouched.
func (h *handler) connect(w http.ResponseWriter, r *http.Request, p Person) {
	t, task, ok := h.decideOrRefuse(w, r, p, r.Host, 0)
	if !ok {
		return
	}
	dialled, err := h.s.dial(r.Context(), t)
	if err != nil {
		h.s.record(p, task, t, 0, 0, err)
		http.Error(w, "agor egress: "+err.Error(), http.StatusBadGateway)
		return
	}
	up := &countingConn{Conn: dialled, live: h.s.countsOf(p.Name)}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "agor egress: cannot tunnel here", http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		up.Close()
		h.s.record(p, task, t, 0, 0, err)
		return
	}
	id, ok := h.tunnels.add(client, up)
	if !ok { // the service is shutting down
		client.Close()
		up.Close()
		h.s.record(p, task, t, 0, 0, errShuttingDown)
		return
	}
	pipe(client, io.MultiReader(io.LimitReader(brw.Reader, int64(brw.Reader.Buffered())), client), up)
	h.s.record(p, task, t, up.written.Load(), up.read.Load(), nil)
	h.tunnels.remove(id)
}

// pipe copies both ways until both are done: from the client (read
// through in, which starts with what was buffered) to up, and back.
// Each side's end is passed on as a half-close.
func pipe(client net.Conn, in io.Reader, up net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, in)
		closeWrite(up)
	}()
	_, _ = io.Copy(client, up)
	closeWrite(client)
	wg.Wait()
	client.Close()
	up.Close()
}

func closeWrite(c net.Conn) {
	switch cc := c.(type) {
	case *personConn:
		c = cc.Conn
	case *countingConn:
		c = cc.Conn
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// forward serves one plain-HTTP request for an absolute URL: checked on
// its own (a kept-alive connection may ask for another host next).
//
// It goes out with the client's values but not its cancellation. Go's
// server cancels a request's context on the first EOF it reads after the
// request, which is also what a client's half-close looks like
// (golang/go#18527), and the executor's relay passes a program's
// half-close on: a model's stream was cut after its first event. A client
// that is really gone is found by the next write to it failing (each
// streamed part is flushed as it comes, as a tunnel's are); shutting the
// service down cancels what is still going.
func (h *handler) forward(w http.ResponseWriter, r *http.Request, p Person) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	id, ok := h.tunnels.add(closerFunc(cancel))
	if !ok {
		http.Error(w, "agor egress: "+errShuttingDown.Error(), http.StatusServiceUnavailable)
		return
	}
	defer h.tunnels.remove(id)
	r = r.WithContext(ctx)
	t, task, ok := h.decideOrRefuse(w, r, p, r.URL.Host, 80)
	if !ok {
		return
	}
	f := &forwarding{h: h, p: p, t: t}
	// Full duplex: the destination may answer before the transport has
	// finished writing the request (after the body's last bytes it reads
	// once more for the end, then closes). Go's server, writing the
	// answer's header, otherwise consumed and closed the request body
	// first; that last read then failed, the transport closed the
	// destination, and a streamed answer was cut after its first bytes
	// (TestPlainHTTPAnswerBeforeRequestWritten; the suite's flake). The
	// handler then must not return before the transport is done with the
	// body (f.sentBody): a read after it races the server's next request.
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
		h.s.Log.Warn("egress: full duplex not available", "err", err)
	}
	ww := &watchedWriter{ResponseWriter: w}
	whole := false
	// Recorded however it ends: ReverseProxy aborts the handler (panics
	// with http.ErrAbortHandler) when a streamed body breaks off.
	defer func() {
		f.sentBody()
		drainBody(w, r.Body)
		up, down := f.bytes()
		if !whole {
			h.cut(p, t, ww, down, ctx.Err())
		}
		h.s.record(p, task, t, up, down, f.failed())
	}()
	f.proxy().ServeHTTP(ww, r)
	whole = ww.failed() == nil // a destination that failed before answering is audited as failed, not cut
}

// forwarding is one forwarded request's reverse proxy and what it saw.
type forwarding struct {
	h       *handler
	p       Person
	t       target
	counted atomic.Pointer[countingConn]
	failure error
	sent    *sentBody // the request's body as the transport reads it; nil: none
}

func (f *forwarding) proxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		// The URL is absolute already; hop-by-hop headers are dropped.
		Rewrite: func(pr *httputil.ProxyRequest) {
			if pr.Out.Body != nil {
				f.sent = &sentBody{ReadCloser: pr.Out.Body, done: make(chan struct{})}
				pr.Out.Body = f.sent
			}
		},
		Transport: &http.Transport{
			DialContext:            f.dial,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 1 << 20,
		},
		FlushInterval: -1, // event streams from models arrive as they are sent
		ErrorLog:      slog.NewLogLogger(f.h.s.Log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			f.failure = err
			http.Error(w, "agor egress: "+err.Error(), http.StatusBadGateway)
		},
	}
}

func (f *forwarding) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, err := f.h.s.dial(ctx, f.t)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c, live: f.h.s.countsOf(f.p.Name)}
	f.counted.Store(cc)
	return cc, nil
}

// bytes are what went to the destination and came back.
func (f *forwarding) bytes() (up, down int64) {
	if cc := f.counted.Load(); cc != nil {
		return cc.written.Load(), cc.read.Load()
	}
	return 0, 0
}

// failed is the failure to record: none when the service shut it down.
func (f *forwarding) failed() error {
	if errors.Is(f.failure, context.Canceled) {
		return nil
	}
	return f.failure
}

// sentBodyWait bounds the wait for the transport to let go of a request
// body: it does once the request is written or its connection closed.
const sentBodyWait = 30 * time.Second

// sentBody waits until the transport is done with the request's body.
func (f *forwarding) sentBody() {
	if f.sent == nil {
		return
	}
	select {
	case <-f.sent.done:
	case <-time.After(sentBodyWait):
		f.h.s.Log.Warn("egress: a forwarded request's body was still held after its answer", "user", f.p.Name, "host", f.t.dst.Host, "waited", sentBodyWait.String())
	}
}

// cut logs a forwarded response that did not reach its client whole:
// the destination broke off, writing to the client failed, or the
// service was shutting down. Which side broke off is what a CLI's
// "malformed response" needs to be read.
func (h *handler) cut(p Person, t target, ww *watchedWriter, down int64, ctxErr error) {
	h.s.Log.Warn("egress: a forwarded response was cut off", "user", p.Name, "host", t.dst.Host, "port", t.dst.Port,
		"bytes_from_destination", down, "bytes_to_client", ww.n.Load(), "write_error", fmt.Sprint(ww.failed()),
		"shutting_down", ctxErr != nil)
}

// closerFunc closes by calling itself: a forwarded request's cancel,
// held with the tunnels so shutting down ends it.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// watchedWriter is the client's ResponseWriter, counting what reached it
// and keeping the first write error.
type watchedWriter struct {
	http.ResponseWriter
	n   atomic.Int64
	err atomic.Pointer[error]
}

func (w *watchedWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	if err != nil {
		w.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (w *watchedWriter) failed() error {
	if e := w.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Unwrap lets ReverseProxy flush the client's writer through it.
func (w *watchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingConn counts what is written to and read from a destination,
// for its record and, as it goes, for its person's totals (a tunnel open
// for hours shows in the metrics before it ends).
type countingConn struct {
	net.Conn
	read, written atomic.Int64
	live          *counts
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	c.live.down.Add(int64(n))
	return n, err
}

// Write counts b before it is sent, and takes back what was not: the
// transport writes a request on a goroutine of its own, which may not
// run again between its write and a count after it, while the response
// has already come back and the request is being recorded (the audit
// then said bytes_up 0; TestPlainHTTPEachRequest caught it under load).
func (c *countingConn) Write(b []byte) (int, error) {
	c.written.Add(int64(len(b)))
	c.live.up.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	if short := int64(len(b) - n); short > 0 {
		c.written.Add(-short)
		c.live.up.Add(-short)
	}
	return n, err
}

// tunnelSet holds the open tunnels and forwarded requests, so shutting
// down closes them.
type tunnelSet struct {
	wg     sync.WaitGroup // tunnels until recorded
	mu     sync.Mutex
	next   int
	open   map[int][]io.Closer
	closed bool // closeAll has begun: no tunnel is added after (wg.Add would race its Wait)
}

var errShuttingDown = errors.New("the egress service is shutting down")

// add holds a tunnel's ends until remove; false once closeAll has begun.
func (ts *tunnelSet) add(ends ...io.Closer) (int, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return 0, false
	}
	if ts.open == nil {
		ts.open = map[int][]io.Closer{}
	}
	ts.next++
	ts.wg.Add(1)
	ts.open[ts.next] = ends
	return ts.next, true
}

func (ts *tunnelSet) remove(id int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.open, id)
	ts.wg.Done()
}

// closeAll closes every tunnel and waits until each is recorded.
func (ts *tunnelSet) closeAll() {
	ts.mu.Lock()
	ts.closed = true
	for _, ends := range ts.open {
		for _, c := range ends {
			c.Close()
		}
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}
