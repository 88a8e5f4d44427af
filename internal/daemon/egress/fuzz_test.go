package egress

import (
	"io"
	"net"
	"testing"
	"time"
)

// FuzzServe: whatever an executor (or any of the person's processes)
// writes to the egress socket gets an answer or a closed connection,
// never a crash or a hang of the service; the service still serves a
// well-formed CONNECT afterwards.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"CONNECT model.test:443 HTTP/1.1\r\nHost: model.test:443\r\n\r\nbytes",
		"GET http://model.test/x HTTP/1.1\r\nHost: model.test\r\nContent-Length: 3\r\n\r\nabc",
		"CONNECT [::1 HTTP/1.1\r\n\r\n",
		"CONNECT :0 HTTP/1.1\r\nHost: :0\r\n\r\n",
		"GET http://[fe80::1%25eth0]:80/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST http://model.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n",
		"\x00\xff\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	w := newWorld(f, allowModel(), 0)
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("unix", w.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write(in)
		_ = c.(*net.UnixConn).CloseWrite()
		_, _ = io.Copy(io.Discard, c)
		ok, resp := w.connect(t, "model.test:443", "")
		ok.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("after %q the service answers %s", in, resp.Status)
		}
		// A tunnel gives its place back once both ends are done, a
		// moment after the client closes it: wait for that here, or
		// under load the iterations outran the releases and met the
		// per-person cap (429 after "00", once, beside make test).
		for deadline := time.Now().Add(10 * time.Second); w.svc.Open(1000) > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %q: %d connections still counted 10 s after their clients closed them", in, w.svc.Open(1000))
			}
		}
	})
}
