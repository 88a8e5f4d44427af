package e2e

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// syncWriter collects a terminal's output while the test looks at it.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String is what was written so far. Under the lock: the copy goes on
// writing while the test reads (a read outside it was a data race the
// race detector caught once in CI).
func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *syncWriter) wait(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		all := w.String()
		ok := strings.Contains(all, s)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in %q", s, all)
		}
	}
}

// copying runs Copy in the background; its result arrives on the channel.
func copying(term *apiclient.Terminal, w *syncWriter) chan [2]any {
	done := make(chan [2]any, 1)
	go func() { code, err := term.Copy(w); done <- [2]any{code, err} }()
	return done
}

// The raw stream through the daemon (agorctl's): keys in, output and the
// exit status out; a detach leaves the shell running and a reattach
// resumes at the offset seen, replaying nothing before it; a second
// attach takes the terminal over and the first stream ends saying so.
func TestDaemonTerminalRaw(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	c := apiclient.New(h.sock)
	ctx := context.Background()
	spawned, err := c.SpawnTerminal(ctx, name, protocol.SpawnTerminalParams{Cwd: ".", Shell: "/bin/sh", Cols: 80, Rows: 24})
	id := spawned.TerminalID
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.AttachTerminal(ctx, name, id)
	if err != nil {
		t.Fatal(err)
	}
	var out syncWriter
	done := copying(a, &out)
	_ = a.Send(apiwire.Frame{Input: []byte("echo first-$((40+2))\n")})
	out.wait(t, "first-42")
	_ = a.Send(apiwire.Frame{Detach: true})
	<-done
	seen := a.Offset
	a.Close()

	b, err := c.AttachTerminalFrom(ctx, name, id, seen)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Offset != seen {
		t.Fatalf("resumed at %d, want %d", b.Offset, seen)
	}
	var out2 syncWriter
	done = copying(b, &out2)
	_ = b.Send(apiwire.Frame{Resize: &[2]int{100, 30}})
	_ = b.Send(apiwire.Frame{Input: []byte("stty size\n")})
	out2.wait(t, "30 100")
	if got := out2.String(); strings.Contains(got, "first-42") {
		t.Fatalf("output before the offset replayed: %q", got)
	}

	third, err := c.AttachTerminal(ctx, name, id)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if r := <-done; r[1] == nil || !strings.Contains(r[1].(error).Error(), "attached elsewhere") {
		t.Fatalf("taken-over stream ended with %v", r)
	}
	var out3 syncWriter
	done = copying(third, &out3)
	out3.wait(t, "first-42") // the whole scrollback
	_ = third.Send(apiwire.Frame{Input: []byte("exit 3\n")})
	select {
	case r := <-done:
		if r[1] != nil || r[0].(int) != 3 {
			t.Fatalf("exit: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit")
	}
	if _, err := c.AttachTerminal(ctx, name, "term_nope"); err == nil {
		t.Fatal("attached to no terminal")
	}
	// On the unix socket every stream above was the executor's to serve:
	// the daemon relayed none.
	metrics := h.metrics(t)
	if !strings.Contains(metrics, `agor_terminal_raw_streams_total{path="handoff"} 3`) ||
		!strings.Contains(metrics, `agor_terminal_raw_streams_total{path="relay"} 0`) {
		t.Fatalf("raw streams not handed over:\n%s", metrics)
	}
}

// A client that stops reading holds the whole path back: the program's
// writes stop a bounded way ahead (PTY, executor and socket buffers), not
// 64 MiB ahead in someone's memory; once it reads, everything arrives.
func TestDaemonTerminalRawBackpressure(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	c := apiclient.New(h.sock)
	ctx := context.Background()
	var res protocol.SpawnTerminalResult
	p := protocol.SpawnTerminalParams{Cwd: ".", Shell: "/bin/sh", Cols: 80, Rows: 24}
	if err := c.Do(ctx, "POST", "/v1/executors/"+name+"/terminals", p, &res); err != nil {
		t.Fatal(err)
	}
	term, err := c.AttachTerminal(ctx, name, res.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	const total = 64 << 20
	_ = term.Send(apiwire.Frame{Input: []byte("stty raw -echo; exec head -c 67108864 /dev/zero\n")})
	time.Sleep(1500 * time.Millisecond) // 64 MiB would pass in far less, unhindered
	written := wchar(t, res.PID)        // the shell became head
	if written < 64<<10 || written > 16<<20 {
		t.Fatalf("head wrote %d bytes with nobody reading: want 64 KiB..16 MiB (it ran, then waited)", written)
	}
	var zeros zeroCounter
	if _, err := term.Copy(&zeros); err != nil {
		t.Fatal(err)
	}
	if zeros.n != total {
		t.Fatalf("read %d zero bytes, want %d", zeros.n, total)
	}
	t.Logf("written by the program while the client did not read: %d KiB", written>>10)
}

// wchar is what a process has written, from /proc/PID/io.
func wchar(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		t.Skipf("no /proc/PID/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no wchar in /proc/PID/io")
	return 0
}

type zeroCounter struct{ n int }

func (z *zeroCounter) Write(p []byte) (int, error) {
	z.n += bytes.Count(p, []byte{0})
	return len(p), nil
}
