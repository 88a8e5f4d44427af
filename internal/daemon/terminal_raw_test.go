package daemon

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/apiclient"
	"github.com/agor-sh/agor/internal/apiwire"
	"github.com/agor-sh/agor/internal/protocol"
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

func (w *syncWriter) wait(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		w.mu.Lock()
		ok, all := strings.Contains(w.b.String(), s), w.b.String()
		w.mu.Unlock()
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
	id, err := c.SpawnTerminal(ctx, name, protocol.SpawnTerminalParams{Cwd: ".", Shell: "/bin/sh", Cols: 80, Rows: 24})
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
	if strings.Contains(out2.b.String(), "first-42") {
		t.Fatalf("output before the offset replayed: %q", out2.b.String())
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
}
