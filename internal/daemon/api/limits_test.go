package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/peer"
)

// serveLimited serves h on a Unix socket behind a UIDLimiter that takes
// every peer for uid 1000 (the tests run as root, which it does not count).
func serveLimited(t *testing.T, max int, h http.Handler) string {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	lim := &UIDLimiter{Listener: ln, Max: max, credOf: func(net.Conn) (peer.Cred, error) { return peer.Cred{UID: 1000}, nil }}
	srv := NewHTTPServer(h)
	go func() { _ = srv.Serve(lim) }()
	t.Cleanup(func() { srv.Close() })
	return sock
}

func get(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// A refused connection is answered and closed at once: the request
	// may then meet a closed socket, while the answer waits to be read.
	_, werr := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: agor\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Sprintf("read: %v (write: %v)", err, werr)
	}
	resp.Body.Close()
	return resp.Status
}

// TestConnsPerUID: past the cap, one more connection of the same uid is
// answered 429 at once; a closed one frees its place.
func TestConnsPerUID(t *testing.T) {
	sock := serveLimited(t, 2, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if st := get(t, c); st != "200 OK" {
			t.Fatalf("within the cap: %s", st)
		}
		conns = append(conns, c)
	}
	extra, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if st := get(t, extra); !strings.HasPrefix(st, "429") {
		t.Fatalf("past the cap: %s, want 429", st)
	}
	conns[0].Close()
	var st string
	for range 50 { // the server notices the close when it next reads
		c, _ := net.Dial("unix", sock)
		if st = get(t, c); st == "200 OK" {
			c.Close()
			break
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if st != "200 OK" {
		t.Fatalf("after one closed: %s", st)
	}
}

// TestStalledBodyAndIdleClosed: a request body that stops arriving, and a
// keep-alive connection left idle, are closed after their timeouts, while
// a slow answer is not cut.
func TestStalledBodyAndIdleClosed(t *testing.T) {
	read := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guardBody(w, r, 200*time.Millisecond) // as NewHTTPServer does, sooner
		_, err := io.ReadAll(r.Body)
		read <- err
		if r.URL.Path == "/slow" {
			time.Sleep(500 * time.Millisecond) // longer than both timeouts
		}
	})
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(h)
	srv.Handler, srv.IdleTimeout = h, 300*time.Millisecond
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	c, _ := net.Dial("unix", sock)
	defer c.Close()
	_, _ = io.WriteString(c, "POST /up HTTP/1.1\r\nHost: agor\r\nContent-Length: 100\r\n\r\n0123456789")
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("a stalled body read to the end")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a stalled body was not cut")
	}

	c2, _ := net.Dial("unix", sock)
	defer c2.Close()
	_, _ = io.WriteString(c2, "POST /slow HTTP/1.1\r\nHost: agor\r\nContent-Length: 2\r\n\r\nok")
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a slow answer after a whole body: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	if _, err := br.ReadByte(); err == nil { // the server closes the idle keep-alive
		t.Fatal("data on an idle keep-alive")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("idle keep-alive closed after %v", d)
	}
}
