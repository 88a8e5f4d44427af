package terminal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// rawEnd is the daemon's end of an attach_terminal_raw connection.
type rawEnd struct {
	c    net.Conn
	r    *bufio.Reader
	res  protocol.AttachTerminalRawResult
	got  []byte        // output read so far
	done chan struct{} // ServeRaw returned
}

// attachRaw serves attach_terminal_raw on a socketpair as the executor
// does (reply, then the stream) and reads the reply.
func (f *fixture) attachRaw(t testing.TB, id string, offset int64) (*rawEnd, error) {
	t.Helper()
	ours, theirs := rpctest.Socketpair(t)
	e := &rawEnd{c: ours, r: bufio.NewReader(ours), done: make(chan struct{})}
	params, _ := json.Marshal(protocol.AttachTerminalRawParams{TerminalID: id, Offset: offset})
	reply := func(res any, err error) error {
		b, _ := json.Marshal(map[string]any{"result": res, "error": err})
		_, werr := theirs.Write(append(b, '\n'))
		return werr
	}
	go func() {
		defer close(e.done)
		f.svc.ServeRaw(context.Background(), params, reply, theirs)
		theirs.Close()
	}()
	t.Cleanup(func() { ours.Close(); <-e.done })
	_ = ours.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := e.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Result protocol.AttachTerminalRawResult
		Error  *rpc.Error
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	e.res = m.Result
	return e, nil
}

// until reads until s is in what was read since from; false on the end of the stream.
func (e *rawEnd) until(t testing.TB, from int, s string) bool {
	t.Helper()
	buf := make([]byte, 32<<10)
	for !bytes.Contains(e.got[from:], []byte(s)) {
		n, err := e.r.Read(buf)
		e.got = append(e.got, buf[:n]...)
		if err != nil {
			if os.IsTimeout(err) {
				t.Fatalf("timed out waiting for %q; got %q", s, e.got)
			}
			return false
		}
	}
	return true
}

// A raw attach gets the scrollback, then live output; its keystrokes
// reach the shell; the JSON-RPC connection gets no output meanwhile, and
// once the shell exits the stream ends after the last output and
// terminal_exit arrives on the JSON-RPC connection.
func TestRawAttach(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	p.send(t, id, "echo BEFORE$((1+1))\n")
	p.waitOutput(t, id, "BEFORE2")
	e, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.res.Offset != 0 || e.res.End <= 0 || e.res.Cols != 80 {
		t.Fatalf("reply %+v", e.res)
	}
	e.until(t, 0, "BEFORE2")
	p.mu.Lock()
	jsonBefore := p.output(id)
	p.mu.Unlock()
	if _, err := e.c.Write([]byte("echo LIVE$((1+1)); exit 3\n")); err != nil {
		t.Fatal(err)
	}
	if e.until(t, 0, "LIVE2"); e.until(t, 0, "\x00never") {
		t.Fatal("the stream did not end")
	}
	if ex := p.waitExit(t, id); ex.ExitCode != 3 {
		t.Fatalf("exit %+v", ex)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.output(id) != jsonBefore {
		t.Fatalf("JSON-RPC output while raw attached: %q", strings.TrimPrefix(p.output(id), jsonBefore))
	}
}

// Dropping the raw connection leaves the shell running; a reattach from
// the offset already seen resumes exactly there: nothing lost, nothing
// repeated (within the scrollback). An offset past the output is refused.
func TestRawReattach(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	a, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = a.c.Write([]byte("echo ONE$((1+1))\n"))
	a.until(t, 0, "ONE2")
	seen := int64(len(a.got))
	a.c.Close()
	<-a.done
	p.send(t, id, "echo TWO$((1+1))\n") // while no raw stream is attached
	time.Sleep(200 * time.Millisecond)
	b, err := f.attachRaw(t, id, seen)
	if err != nil {
		t.Fatal(err)
	}
	if b.res.Offset != seen {
		t.Fatalf("resumed at %d, want %d", b.res.Offset, seen)
	}
	b.until(t, 0, "TWO2")
	if bytes.Contains(b.got, []byte("ONE2")) {
		t.Fatalf("output before the offset repeated: %q", b.got)
	}
	if _, err := f.attachRaw(t, id, b.res.End+1<<20); !isCode(err, rpc.CodeInvalidParams) {
		t.Fatalf("attach past the end: %v", err)
	}
	if _, err := f.attachRaw(t, "term_nope", 0); !isCode(err, protocol.CodeNotFound) {
		t.Fatalf("attach to no terminal: %v", err)
	}
}

// A raw stream attached after spawn_terminal (as agorctl terminal and
// the Cockpit page do) and then gone leaves the terminal detached: the
// spawning JSON-RPC connection, which lives on, does not keep it listed
// attached, and the grace period runs, ending it.
func TestRawDetachLeavesDetached(t *testing.T) {
	f := newFixture(t, Config{DetachGrace: 300 * time.Millisecond})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	a, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = a.c.Write([]byte("echo UP$((1+1))\n"))
	a.until(t, 0, "UP2")
	if ts := p.list(t); len(ts) != 1 || !ts[0].Attached {
		t.Fatalf("while the raw stream is attached: %+v", ts)
	}
	a.c.Close()
	<-a.done
	waitDetached(t, p, id)
	if ex := p.waitExit(t, id); ex.TerminalID != id {
		t.Fatalf("the detach grace did not end the terminal: %+v", ex)
	}
}

func isCode(err error, code int) bool {
	var e *rpc.Error
	return errors.As(err, &e) && e.Code == code
}

// A second raw attach takes the terminal over, as attach_terminal does:
// the first stream ends, the second gets the output and sends the keys.
func TestRawTakeover(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	a, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.until(t, 0, "\x00never") {
		t.Fatal("the first stream did not end")
	}
	_, _ = b.c.Write([]byte("echo B$((1+1))\n"))
	b.until(t, 0, "B2")
	// And a JSON attach takes it back: the raw stream ends.
	if err := p.c.Call(context.Background(), protocol.MethodAttachTerminal, protocol.TerminalIDParams{TerminalID: id}, nil); err != nil {
		t.Fatal(err)
	}
	if b.until(t, 0, "\x00never") {
		t.Fatal("the raw stream did not end on a JSON attach")
	}
}

// A raw reader that does not read holds the program back: what the
// executor has taken from the PTY stays bounded (its pipeline and the
// socket's buffers), and once read, all of it arrives.
func TestRawBackpressure(t *testing.T) {
	f := newFixture(t, Config{})
	p := f.connect(t)
	id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
	e, err := f.attachRaw(t, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.c.Write([]byte("stty raw -echo; echo GO$((1+1)); head -c 67108864 /dev/zero; echo END$((1+1))\n"))
	e.until(t, 0, "GO2")
	// Count from the marker, not from the end of the read that held it:
	// on a loaded host the program's first output shares that read (once
	// 32,764 zeros after "GO2\n" in a 32 KiB read, counted as lost).
	from := bytes.Index(e.got, []byte("GO2")) + len("GO2")
	time.Sleep(700 * time.Millisecond) // 64 MiB would pass in far less, unhindered
	tm, _ := f.svc.lookup(id)
	tm.mu.Lock()
	taken := tm.off
	tm.mu.Unlock()
	if taken > 16<<20 {
		t.Fatalf("the executor took %d bytes from the PTY with nobody reading", taken)
	}
	_ = e.c.SetReadDeadline(time.Now().Add(60 * time.Second))
	e.until(t, from, "END2")
	if n := bytes.Count(e.got[from:], []byte{0}); n != 64<<20 {
		t.Fatalf("received %d of %d zero bytes", n, 64<<20)
	}
	t.Logf("taken from the PTY while stalled: %d KiB", taken>>10)
}
