package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/rawframe"
)

// promptDaemon streams a turn whose result status is the prompt's text,
// and serves a terminal that prints "hi" and is ended by SIGTERM (named as Go names it, as the executor sends it).
func promptDaemon(t *testing.T) *fakeDaemon {
	d := newFakeDaemon(t)
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/executors/alice/prompt", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&b)
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]any{"task_id": "t1", "session_id": "s1"})
		_ = enc.Encode(map[string]any{"event": map[string]any{"sequence": 0,
			"event_data": map[string]any{"type": "text_delta", "data": map[string]any{"text": "hello there"}}}})
		if b.Prompt == "restart" { // the daemon goes away mid-turn
			return
		}
		res := map[string]any{"result": map[string]any{"status": b.Prompt, "message_count": 1}}
		if b.Prompt == "full" { // the agent completed; the daemon could not store all of it
			res = map[string]any{"result": map[string]any{"status": "completed", "message_count": 1},
				"status": "incomplete", "dropped_events": 7, "warning": "7 of the agent's events were not stored: storage full: /var/lib/agor"}
		}
		_ = enc.Encode(res)
	})
	// The next daemon: the task's events after the one shown, then its end.
	m.HandleFunc("GET /v1/tasks/t1/events", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("after") != "0" || r.URL.Query().Get("follow") != "1" {
			t.Errorf("resumed with %s, want after=0&follow=1", r.URL.RawQuery)
		}
		fmt.Fprint(w, "id: 1\ndata: "+`{"task_id":"t1","sequence":1,"event_type":"text_delta","event_data":{"type":"text_delta","data":{"text":" and after"}}}`+"\n\n")
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
	})
	m.HandleFunc("GET /v1/tasks/t1", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"id":"t1","status":"completed","result":{"status":"completed","message_count":2}}`)
	})
	// term_2's first stream breaks off (the daemon restarted); the second,
	// from the offset reached, brings the rest and the exit.
	attaches := 0
	m.HandleFunc("GET /v1/executors/alice/terminals/term_2/attach", func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijack(t, w)
		if conn == nil {
			return
		}
		defer conn.Close()
		attaches++
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: agor-terminal-raw\r\n\r\n")
		if attaches == 1 {
			_ = rawframe.Write(rw, rawframe.Output, []byte("before\n"))
			_ = rw.Flush()
			return
		}
		if got := r.URL.Query().Get("offset"); got != "7" {
			t.Errorf("reattached at offset %q, want 7", got)
		}
		_ = rawframe.Write(rw, rawframe.Output, []byte("after\n"))
		_ = rawframe.Write(rw, rawframe.Exit, []byte(`{"terminal_id":"term_2","exit_code":0}`))
		_ = rw.Flush()
		var buf []byte
		_, _, _ = rawframe.Read(rw, &buf) // the resize
	})
	// term_3 is attached from elsewhere while this client has it: its
	// stream ends with rawframe.Replaced, and a second attach would take
	// it back.
	m.HandleFunc("GET /v1/executors/alice/terminals/term_3/attach", func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijack(t, w)
		if conn == nil {
			return
		}
		defer conn.Close()
		if d.attaches3.Add(1) > 1 {
			t.Error("attached again after another client took the terminal over")
		}
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: agor-terminal-raw\r\n\r\n")
		_ = rawframe.Write(rw, rawframe.Output, []byte("mine\n"))
		_ = rawframe.Write(rw, rawframe.Error, []byte(rawframe.Replaced))
		_ = rw.Flush()
		var buf []byte
		_, _, _ = rawframe.Read(rw, &buf) // the resize
	})
	m.HandleFunc("POST /v1/executors/alice/terminals", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"terminal_id":"term_1"}`)
	})
	m.HandleFunc("GET /v1/executors/alice/terminals/term_1/attach", func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijack(t, w)
		if conn == nil {
			return
		}
		defer conn.Close()
		exit := `{"terminal_id":"term_1","exit_code":-1,"signal":"terminated"}`
		if r.Header.Get("Upgrade") == rawframe.Upgrade {
			fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: agor-terminal-raw\r\n\r\n")
			_ = rawframe.Write(rw, rawframe.Output, []byte("hi\n"))
			_ = rawframe.Write(rw, rawframe.Exit, []byte(exit))
			_ = rw.Flush()
			var buf []byte
			_, _, _ = rawframe.Read(rw, &buf) // the first resize
			return
		}
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n")
		fmt.Fprint(rw, `{"output":"aGkK"}`+"\n"+`{"exit":`+exit+`}`+"\n")
		_ = rw.Flush()
		_, _ = rw.ReadString('\n') // the first resize
	})
	srv := &http.Server{Handler: m}
	d.socket = strings.TrimSuffix(d.socket, "daemon.sock") + "stream.sock"
	ln := listenUnix(t, d.socket)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return d
}

// hijack takes w's connection over for a terminal stream (nil: the
// test is already failed).
func hijack(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return nil, nil
	}
	return conn, rw
}

// prompt exits as the turn ended: 0 completed, 1 failed, 124 timeout,
// 130 cancelled; the agent's text is on stdout.
func TestPromptExitStatus(t *testing.T) {
	d := promptDaemon(t)
	for status, code := range map[string]int{"completed": 0, "failed": 1, "timeout": 124, "cancelled": 130} {
		r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", d.socket, "alice", status)
		if r.code != code || !strings.Contains(r.stdout, "hello there") || !strings.Contains(r.stderr, status+" · 1 messages") {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", status, r.code, code, r.stdout, r.stderr)
		}
	}
}

// A task the daemon recorded incomplete (its store was full) is shown so,
// with the daemon's warning, not as the agent's "completed"; exit 1.
func TestPromptIncomplete(t *testing.T) {
	d := promptDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", d.socket, "alice", "full")
	if r.code != exitFailure || !strings.Contains(r.stderr, "incomplete · 1 messages") || strings.Contains(r.stderr, "completed ·") ||
		!strings.Contains(r.stderr, "warning: 7 of the agent's events were not stored: storage full: /var/lib/agor") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// A prompt whose daemon goes away mid-turn follows its task on the next
// one, from the event after the last it showed, and ends as the task did.
func TestPromptResumesAcrossDaemonRestart(t *testing.T) {
	d := promptDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", d.socket, "alice", "restart")
	if r.code != 0 || r.stdout != "hello there and after" || !strings.Contains(r.stderr, "the daemon went away") ||
		!strings.Contains(r.stderr, "following task t1 from event 1") || !strings.Contains(r.stderr, "completed · 2 messages") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A terminal whose stream breaks off (the daemon went away) is attached
// again from where its output had reached: the same shell, each byte once.
func TestTerminalReattaches(t *testing.T) {
	d := promptDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "terminal", "--no-tty", "--api", d.socket, "--attach", "term_2", "alice")
	if r.code != 0 || r.stdout != "before\nafter\n" || !strings.Contains(r.stderr, "reattaching to terminal term_2") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A terminal another client attached to runs on there: agorctl says so
// and how to take it back, exits 0, and does not attach again (two
// clients that did took it from each other for ever: the page's
// terminal and the shell's agorctl agent, found by the suite). Shown
// failing before: stderr "reattaching to terminal term_3", attached again.
func TestTerminalTakenOver(t *testing.T) {
	d := promptDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "terminal", "--no-tty", "--api", d.socket, "--attach", "term_3", "alice")
	if r.code != 0 || r.stdout != "mine\n" || strings.Contains(r.stderr, "reattaching") ||
		!strings.Contains(r.stderr, "was attached elsewhere and runs on there; take it back with: agorctl terminal --attach term_3 alice") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := d.attaches3.Load(); n != 1 {
		t.Fatalf("%d attaches", n)
	}
}

// terminal copies the shell's output and exits as a shell reports a
// signal: 128+15 for SIGTERM.
func TestTerminalExitStatus(t *testing.T) {
	d := promptDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "terminal", "--no-tty", "--api", d.socket, "alice")
	if r.code != 128+15 || r.stdout != "hi\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestTerminalNeedsTerminal: without a terminal on standard input (and
// without --no-tty) agorctl terminal refuses at once, saying why, and asks
// the daemon nothing.
func TestTerminalNeedsTerminal(t *testing.T) {
	d := promptDaemon(t)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, stdin := range []io.Reader{closedStdin{t}, devnull} {
		r := agorctl(context.Background(), stdin, "terminal", "--api", d.socket, "alice")
		if r.code != exitFailure || !strings.Contains(r.stderr, "standard input is not a terminal") || r.stdout != "" {
			t.Fatalf("stdin %T: exit %d, stdout %q, stderr %q", stdin, r.code, r.stdout, r.stderr)
		}
	}
}

// TestAsWritten: a command is shown as the agent wrote it, not with
// encoding/json's HTML escapes (the approval text read "id -un \u003e x").
func TestAsWritten(t *testing.T) {
	got := string(asWritten(map[string]any{"command": "id -un > whoami.txt && echo '<ok>'"}))
	if got != `{"command":"id -un > whoami.txt && echo '<ok>'"}` {
		t.Fatalf("%s", got)
	}
}
