package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// doorRig is the gateway behind the door, as the daemon serves it, on a
// Unix socket: a connection's first line is its credential.
func doorRig(t *testing.T, auth recording) (string, ledger) {
	t.Helper()
	up := newWitness(t, "", canned("application/json", anthJSON))
	sock := t.TempDir() + "/gw.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l := make(ledger, 16)
	tr := &http.Transport{}
	srv := &http.Server{Handler: New(auth, l, Options{Door: true, Transport: tr}), ConnContext: DoorContext, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(DoorListener(ln)) }()
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	auth.grants[taskToken] = grantFor(Anthropic, up.URL)
	return sock, l
}

// exchange sends raw on a new connection to sock and reads one answer.
func exchange(t *testing.T, sock, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func messages(key string) string {
	body := `{"model":"m","max_tokens":8,"messages":[]}`
	return "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " + key + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
}

// Behind the door the connection's credential decides, never the key the
// request presents: the task's token in the header of a connection that
// came with none (whoever connects straight to the socket with a token
// read somewhere) is refused, and the Authorizer is asked with none, so
// it can say why; the door line with the placeholder in the header is
// served; a door line without end is a bad request, read no further.
func TestDoorCredentialIsTheConnections(t *testing.T) {
	asked := make(chan string, 8)
	auth := authz{grants: map[string]Grant{}}
	sock, l := doorRig(t, recording{auth, asked})
	resp, body := exchange(t, sock, messages(taskToken))
	if resp == nil || resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, taskToken) {
		t.Fatalf("a task's token in the header, no door line: %v %s", resp, body)
	}
	if got := <-asked; got != "" {
		t.Fatalf("the Authorizer was asked with %q, want the connection's (none)", got)
	}
	l.none(t)
	resp, body = exchange(t, sock, DoorPrefix+taskToken+"\n"+messages("agor-gateway"))
	if resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("door line, placeholder in the header: %v %s", resp, body)
	}
	if got := <-asked; got != taskToken {
		t.Fatalf("the Authorizer was asked with %q", got)
	}
	if e := l.next(t); e.Task != "t-1" {
		t.Fatalf("recorded %+v", e)
	}
	resp, body = exchange(t, sock, DoorPrefix+strings.Repeat("x", 2*maxDoorLine))
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a door line without end: %v %q, want 400 and the connection closed", resp, body)
	}
	l.none(t)
}

// recording is an Authorizer that says what it was asked with.
type recording struct {
	authz
	asked chan string
}

func (r recording) Authorize(ctx context.Context, api API, token string) (Grant, error) {
	r.asked <- token
	return r.authz.Authorize(ctx, api, token)
}

// FuzzDoorLine: whatever a connection starts with, in any pieces, the
// door takes off a whole line only when it starts with DoorPrefix, hands
// on every other byte as it came, and reads no more than maxDoorLine
// before deciding.
func FuzzDoorLine(f *testing.F) {
	for _, s := range []string{DoorPrefix + "tok\nPOST / HTTP/1.1\r\n", "POST / HTTP/1.1\r\n", "AGOR", DoorPrefix, DoorPrefix + "\n", "\n", ""} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, piece uint8) {
		in = in[:min(len(in), 4*maxDoorLine)] // past the line, bytes are bytes (and a pipe is slow)
		a, b := net.Pipe()
		go func() {
			for rest := in; len(rest) > 0; {
				n := min(len(rest), 1+int(piece))
				if _, err := b.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
			}
			b.Close()
		}()
		c := &doorConn{Conn: a}
		out, _ := io.ReadAll(c)
		a.Close()
		want := in
		if bytes.HasPrefix(in, []byte(DoorPrefix)) {
			i := bytes.IndexByte(in, '\n')
			switch {
			case i >= 0 && i < maxDoorLine:
				want = in[i+1:]
				if c.cred != strings.TrimSpace(string(in[len(DoorPrefix):i])) {
					t.Fatalf("credential %q from %q", c.cred, in)
				}
			case len(in) >= maxDoorLine:
				want = nil // refused unread
			}
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("handed on %q from %q, want %q", out, in, want)
		}
	})
}
