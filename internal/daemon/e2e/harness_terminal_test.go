package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The terminal's NDJSON attach stream, read and written frame by frame
// as a test needs it (apiclient's Terminal is the raw stream's).

// b64 is s base64-encoded, as a frame's input is.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// stream is one attached terminal and the output seen on it so far.
type stream struct {
	conn net.Conn
	dec  *json.Decoder
	seen strings.Builder
	// replaying: what comes is the scrollback of an earlier attach, whose
	// terminal queries were answered then (answerQueries).
	replaying bool
}

// attach upgrades a connection to the terminal's NDJSON stream.
func (h *harness) attach(t *testing.T, name, id string) *stream {
	t.Helper()
	conn, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/executors/%s/terminals/%s/attach HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n", name, id)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("attach: %v %v", resp, err)
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return &stream{conn: conn, dec: json.NewDecoder(rd)}
}

func (s *stream) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *stream) close() { s.conn.Close() }

// next returns the next frame's output, or its exit.
func (s *stream) next(t *testing.T) ([]byte, map[string]any) {
	t.Helper()
	var f struct {
		Output []byte         `json:"output"`
		Exit   map[string]any `json:"exit"`
	}
	if err := s.dec.Decode(&f); err != nil {
		t.Fatalf("read frame (seen %q): %v", s.seen.String(), err)
	}
	return f.Output, f.Exit
}

func (s *stream) waitFor(t *testing.T, want string) {
	t.Helper()
	for !strings.Contains(s.seen.String(), want) {
		out, exit := s.next(t)
		if exit != nil {
			t.Fatalf("exited %v before %q appeared in %q", exit, want, s.seen.String())
		}
		s.seen.Write(out)
	}
}

func (s *stream) exitCode(t *testing.T) int {
	t.Helper()
	for {
		out, exit := s.next(t)
		if exit != nil {
			return int(exit["exit_code"].(float64))
		}
		s.seen.Write(out)
	}
}
