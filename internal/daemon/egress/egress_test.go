package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type records struct {
	mu  sync.Mutex
	all []audit.Record
}

func (r *records) Log(rec audit.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rec)
}

func (r *records) last(t *testing.T) audit.Record {
	t.Helper()
	for range 100 {
		r.mu.Lock()
		n := len(r.all)
		var rec audit.Record
		if n > 0 {
			rec = r.all[n-1]
		}
		r.mu.Unlock()
		if n > 0 {
			return rec
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no audit record")
	return audit.Record{}
}

func (r *records) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = nil
}

// world is the egress service on a Unix socket, a destination server on
// loopback that every allowed address is dialled to (the test cannot
// own 10.199.0.2), and a resolver of fixed names.
type world struct {
	sock     string
	rec      *records
	svc      *Service
	mu       sync.Mutex
	dialled  []string
	resolved []string
	dest     string // the destination server's real address
}

func newWorld(t testing.TB, set config.NetworkSet, max int) *world {
	t.Helper()
	w := &world{rec: &records{}}
	dest, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.dest = dest.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" { // a body that breaks off midway
			c, _, _ := rw.(http.Hijacker).Hijack()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nten bytes.")
			c.Close()
			return
		}
		if r.URL.Path == "/stream" || r.URL.Path == "/read-then-stream" { // a model's event stream: parts, flushed, apart
			if r.URL.Path == "/read-then-stream" { // as a model does: the whole request first
				_, _ = io.Copy(io.Discard, r.Body)
			}
			gap := 20 * time.Millisecond
			if r.URL.Path == "/read-then-stream" {
				gap = 100 * time.Millisecond // longer, in all, than slowAfterWrite's pause
			}
			for i := range 5 {
				fmt.Fprintf(rw, "event %d\n", i)
				rw.(http.Flusher).Flush()
				time.Sleep(gap)
			}
			return
		}
		fmt.Fprintf(rw, "hello from %s%s", r.Host, r.URL.Path)
	})}
	go func() { _ = srv.Serve(dest) }()
	t.Cleanup(func() { srv.Close() })
	names := map[string][]netip.Addr{
		"model.test":  {netip.MustParseAddr("10.199.0.2")},
		"sneaky.test": {netip.MustParseAddr("192.0.2.7")},
		"local.test":  {netip.MustParseAddr("127.0.0.1")},
	}
	w.svc = &Service{
		Person: func(_ context.Context, uid uint32) (Person, error) {
			if uid != 1000 {
				return Person{}, fmt.Errorf("uid %d: no such user", uid)
			}
			return Person{Name: "alice", UID: uid, Set: set}, nil
		},
		Audit: w.rec, Log: slog.New(slog.DiscardHandler), MaxPerUser: max, credOf: testCred,
		TaskOf: func(_ context.Context, p Person, session string) string {
			if p.Name == "alice" && session == "0123abcd" {
				return "t0123"
			}
			return ""
		},
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			w.mu.Lock()
			w.resolved = append(w.resolved, host)
			w.mu.Unlock()
			if a, ok := names[host]; ok {
				return a, nil
			}
			return nil, errors.New("no such host")
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			w.mu.Lock()
			w.dialled = append(w.dialled, addr)
			w.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, w.dest)
		},
	}
	w.sock = filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return w
}

// connect sends CONNECT on a new connection and returns it with the reply.
func (w *world) connect(t *testing.T, authority, extra string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, extra)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return &bufConn{Conn: c, r: br}, resp
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func allowModel() config.NetworkSet {
	return config.NetworkSet{Mode: config.NetworkProxy, Allow: []string{"model.test", "sneaky.test", "local.test"}, Deny: []string{"192.0.2.0/24"}}
}

// testCred stands in for SO_PEERCRED (the test runs as one uid).
var testCred = func(net.Conn) (peer.Cred, error) { return peer.Cred{UID: 1000}, nil }

// TestConnectAllowedAudited: a tunnel to a listed name carries bytes both
// ways untouched, to the address the service resolved, and is audited
// with the task running in the session the proxy credentials name, and
// the bytes each way.
func TestConnectAllowedAudited(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	auth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("session:0123abcd")) + "\r\n"
	c, resp := w.connect(t, "model.test:443", auth)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	req := "GET /v1/messages HTTP/1.1\r\nHost: model.test\r\nConnection: close\r\n\r\n"
	io.WriteString(c, req)
	body, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(body), "hello from model.test/v1/messages") {
		t.Fatalf("through the tunnel: %q", body)
	}
	rec := w.rec.last(t)
	want := audit.Record{Action: audit.Egress, User: "alice", UID: audit.UIDOf(1000), Session: "0123abcd", Task: "t0123", Host: "model.test", Port: 443,
		Address: "10.199.0.2", Decision: "allowed", Reason: "allow model.test", BytesUp: int64(len(req)), BytesDown: int64(len(body))}
	rec.Time = time.Time{}
	if rec != want {
		t.Errorf("audit record\n got %+v\nwant %+v", rec, want)
	}
	if w.dialled[0] != "10.199.0.2:443" {
		t.Errorf("dialled %v", w.dialled)
	}
	tot := w.svc.Totals()["alice"]
	if tot.BytesUp != int64(len(req)) || tot.BytesDown != int64(len(body)) || tot.Allowed != 1 {
		t.Errorf("totals %+v", tot)
	}
}

// TestRefusals: what the policy refuses gets 403 naming the rule and an
// audit record; a name nothing lists is never looked up.
func TestRefusals(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	tests := []struct{ authority, rule string }{
		{"elsewhere.test:443", "not listed"},
		{"sneaky.test:443", "deny 192.0.2.0/24"}, // a listed name resolving to a denied address
		{"local.test:443", "builtin loopback"},   // a listed name resolving to loopback
		{"10.199.0.2:443", "not listed"},         // the model's address, asked for by address
		{"127.0.0.1:22", "builtin loopback"},
		{"[::1]:22", "builtin loopback"},
		{"bad_host!:443", "not listed: "},
	}
	for _, tc := range tests {
		w.rec.reset()
		c, resp := w.connect(t, tc.authority, "")
		c.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Agor-Egress-Rule"), tc.rule) {
			t.Errorf("CONNECT %s: %s rule %q, want 403 %q", tc.authority, resp.Status, resp.Header.Get("X-Agor-Egress-Rule"), tc.rule)
			continue
		}
		if rec := w.rec.last(t); rec.Decision != "denied" || !strings.HasPrefix(rec.Reason, tc.rule) || rec.User != "alice" {
			t.Errorf("CONNECT %s audited %+v", tc.authority, rec)
		}
	}
	for _, h := range w.resolved {
		if h != "sneaky.test" && h != "local.test" {
			t.Errorf("resolved %q, which nothing lists", h)
		}
	}
	if len(w.dialled) != 0 {
		t.Errorf("dialled %v for refused destinations", w.dialled)
	}
}

// TestPlainHTTPEachRequest: absolute-form requests are forwarded and
// audited one by one.
func TestPlainHTTPEachRequest(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	c, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST http://model.test/v1/chat HTTP/1.1\r\nHost: model.test\r\nContent-Length: 5\r\n\r\nhello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "hello from model.test/v1/chat" {
		t.Fatalf("allowed request: %s %q", resp.Status, body)
	}
	rec := w.rec.last(t)
	if rec.Decision != "allowed" || rec.Host != "model.test" || rec.Port != 80 || rec.BytesUp == 0 || rec.BytesDown == 0 {
		t.Errorf("audited %+v", rec)
	}
	// The same connection, another host: refused on its own.
	fmt.Fprintf(c, "GET http://elsewhere.test/ HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("second request: %s", resp.Status)
	}
	// Origin-form is not a proxy request.
	c2, _ := net.Dial("unix", w.sock)
	defer c2.Close()
	fmt.Fprintf(c2, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("origin-form: %v %v", resp, err)
	}
}

// TestPlainHTTPBrokenOffRecorded: a response that breaks off midway (the
// proxy aborts its handler) is still audited, with what went through.
func TestPlainHTTPBrokenOffRecorded(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	c, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://model.test/broken HTTP/1.1\r\nHost: model.test\r\n\r\n")
	io.Copy(io.Discard, c)
	rec := w.rec.last(t)
	if rec.Decision != "allowed" || rec.Host != "model.test" || rec.BytesDown == 0 {
		t.Errorf("audited %+v", rec)
	}
}

// TestPlainHTTPClientHalfClose: a client that half-closes its
// connection once its request is sent (the executor's relay passes on
// whatever the program does) still reads the whole streamed answer. Go's
// server cancels a request's context on the first EOF it reads after the
// request, and the reverse proxy then cut the destination off after its
// first events: a model's stream arrived as headers and one event, which
// Claude Code reported as an empty or malformed response (golang/go#18527).
func TestPlainHTTPClientHalfClose(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	c, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST http://model.test/stream HTTP/1.1\r\nHost: model.test\r\nContent-Length: 2\r\n\r\n{}")
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	want := "event 0\nevent 1\nevent 2\nevent 3\nevent 4\n"
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("after a half-close: %s %q (%v), want the whole stream %q", resp.Status, body, err, want)
	}
	if rec := w.rec.last(t); rec.Decision != "allowed" {
		t.Errorf("audited %+v", rec)
	}
}

// slowAfterWrite is a destination connection whose writer is slow to come
// back after each large write, as a busy machine's scheduler may leave the
// transport's request writer after the body's last bytes went out.
type slowAfterWrite struct{ net.Conn }

func (c slowAfterWrite) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if len(b) >= 8<<10 {
		time.Sleep(150 * time.Millisecond)
	}
	return n, err
}

// TestPlainHTTPAnswerBeforeRequestWritten: a destination that has read
// the whole request answers while the transport's writer is still to
// finish the request (its check that the body ended, then its close).
// Go's server, writing the answer's header, consumed and closed the
// client's request body unless the response is full duplex; the writer's
// last read then failed ("invalid Read on closed Body"), the transport
// closed the destination's connection, and the streamed answer was cut
// after its first bytes ("use of closed network connection"). That was
// the suite's flake: Claude Code's request bodies are ~88 KB.
func TestPlainHTTPAnswerBeforeRequestWritten(t *testing.T) {
	w := newWorld(t, allowModel(), 0)
	dial := w.svc.Dial
	w.svc.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return slowAfterWrite{c}, nil
	}
	c, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := strings.Repeat("x", 88<<10)
	go fmt.Fprintf(c, "POST http://model.test/read-then-stream HTTP/1.1\r\nHost: model.test\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	want := "event 0\nevent 1\nevent 2\nevent 3\nevent 4\n"
	if resp.StatusCode != 200 || string(got) != want {
		t.Fatalf("%s %q (%v), want the whole stream %q", resp.Status, got, err, want)
	}
}

func TestModeNone(t *testing.T) {
	w := newWorld(t, config.NetworkSet{Mode: config.NetworkNone, Allow: []string{"*"}}, 0)
	c, resp := w.connect(t, "model.test:443", "")
	c.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Agor-Egress-Rule") != "mode none" {
		t.Errorf("none: %s %q", resp.Status, resp.Header.Get("X-Agor-Egress-Rule"))
	}
}

// TestConnectionCap: one person holds at most MaxPerUser connections; the
// next is answered 429 and audited, and a place freed is taken again.
func TestConnectionCap(t *testing.T) {
	w := newWorld(t, allowModel(), 3)
	var held []net.Conn
	for range 3 {
		c, resp := w.connect(t, "model.test:443", "")
		if resp.StatusCode != 200 {
			t.Fatalf("within the cap: %s", resp.Status)
		}
		held = append(held, c)
	}
	c, resp := w.connect(t, "model.test:443", "")
	c.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("over the cap: %s", resp.Status)
	}
	held[0].Close()
	for i := 0; w.svc.Open(1000) != 2 && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	c, resp = w.connect(t, "model.test:443", "")
	c.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after one closed: %s", resp.Status)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

func TestUnknownPeerRefused(t *testing.T) {
	old := testCred
	testCred = func(net.Conn) (peer.Cred, error) { return peer.Cred{UID: 4242}, nil }
	defer func() { testCred = old }()
	w := newWorld(t, allowModel(), 0)
	c, resp := w.connect(t, "model.test:443", "")
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("unknown uid: %s", resp.Status)
	}
}

// TestTunnelSetClosed: a tunnel that reaches the set once shutting down
// has begun is refused, not added: adding it raced closeAll's Wait (the
// race detector caught wg.Add beside wg.Wait in TestUnknownPeerRefused's
// shutdown) and it would have been left open.
func TestTunnelSetClosed(t *testing.T) {
	ts := &tunnelSet{}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	id, ok := ts.add(a, b)
	if !ok {
		t.Fatal("refused before closeAll")
	}
	done := make(chan struct{})
	go func() { ts.closeAll(); close(done) }()
	for { // closeAll has begun once it closed the open tunnel
		if _, err := a.Write([]byte("x")); err != nil {
			break
		}
	}
	if _, ok := ts.add(a, b); ok {
		t.Error("a tunnel was added after closeAll began")
	}
	ts.remove(id)
	<-done
}

// TestNeverDialled: whatever a person's mode, even open (which reaches
// everything from her own network namespace anyway), the daemon does not
// lend its own position: loopback (its API, local services as user
// agor), link-local and instance metadata are refused, by name or by
// address, and never dialled.
func TestNeverDialled(t *testing.T) {
	for _, set := range []config.NetworkSet{{Mode: config.NetworkOpen}, allowModel()} {
		w := newWorld(t, set, 0)
		for _, authority := range []string{"127.0.0.1:8080", "local.test:443", "[::1]:22", "169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80"} {
			w.rec.reset()
			c, resp := w.connect(t, authority, "")
			c.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Agor-Egress-Rule"), "builtin ") {
				t.Errorf("%s: CONNECT %s: %s rule %q, want 403 builtin", set.Mode, authority, resp.Status, resp.Header.Get("X-Agor-Egress-Rule"))
			}
		}
		if len(w.dialled) != 0 {
			t.Errorf("%s: dialled %v", set.Mode, w.dialled)
		}
	}
}
