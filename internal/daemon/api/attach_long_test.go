package api

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// TestTerminalOutlivesConnectionTimeouts: with the API's idle and stalled
// body timeouts at 200 ms, a terminal attached for a second, silent for
// most of it, still carries input and output: the upgraded stream is not
// a keep-alive connection nor a request body.
func TestTerminalOutlivesConnectionTimeouts(t *testing.T) {
	const short = 200 * time.Millisecond
	dir, err := os.MkdirTemp("", "agor-attach")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	work := filepath.Join(dir, "work")
	_ = os.Mkdir(work, 0o777)
	_ = os.Chmod(work, 0o777)
	backend := &executorunit.Direct{Policy: executorunit.Policy{MinUID: 1, SocketTemplate: filepath.Join(dir, "x", "{user}.sock")}, Binary: binary, Root: work}
	p := &pool.Pool{Backend: backend, Timeout: 10 * time.Second}
	out, terms := &Outputs{}, &Terminals{}
	p.Handler = func(user string) rpc.Handler { return terms.Handler(user, out.Handler(nil)) }
	h := (&Server{Pool: p, Backend: backend, Outputs: out, Terminals: terms}).Handler()
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(h)
	srv.IdleTimeout = short
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { guardBody(w, r, short); h.ServeHTTP(w, r) })
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done; p.Close(); backend.Close() })

	name, _ := target(t)
	code, spawned := doUnix(t, sock, "POST", "/v1/executors/"+name+"/terminals", `{"cwd":".","shell":"/bin/sh","cols":80,"rows":24}`)
	id, _ := spawned["terminal_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("spawn: %d %v", code, spawned)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/executors/%s/terminals/%s/attach HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n", name, id)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("attach: %v %v", resp, err)
	}
	attached := time.Now()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	dec := json.NewDecoder(rd)
	var seen strings.Builder
	waitFor := func(want string) {
		t.Helper()
		for !strings.Contains(seen.String(), want) {
			var f struct {
				Output []byte         `json:"output"`
				Exit   map[string]any `json:"exit"`
			}
			if err := dec.Decode(&f); err != nil || f.Exit != nil {
				t.Fatalf("before %q (seen %q): %v %v", want, seen.String(), err, f.Exit)
			}
			seen.Write(f.Output)
		}
	}
	send := func(s string) {
		t.Helper()
		line := `{"input":"` + base64.StdEncoding.EncodeToString([]byte(s)) + `"}` + "\n"
		if _, err := conn.Write([]byte(line)); err != nil {
			t.Fatalf("write after %v attached: %v", time.Since(attached), err)
		}
	}
	send("echo first-$((40+2))\n")
	waitFor("first-42")
	time.Sleep(5 * short) // silent, longer than both timeouts
	send("echo second-$((40+3))\n")
	waitFor("second-43")
	for i := range 5 { // a trickle of keystrokes, each gap under the timeouts
		time.Sleep(short / 2)
		send(fmt.Sprintf("echo tick-%d\n", i))
	}
	waitFor("tick-4")
	t.Logf("attached %v with idle and stall timeouts of %v", time.Since(attached).Round(time.Millisecond), short)
}

// doUnix makes one request on a new connection to sock.
func doUnix(t *testing.T, sock, method, path, body string) (int, map[string]any) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: agor\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
