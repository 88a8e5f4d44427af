package terminal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func (p *peer) list(t testing.TB) []protocol.TerminalInfo {
	t.Helper()
	var res protocol.ListTerminalsResult
	if err := p.c.Call(context.Background(), "list_terminals", struct{}{}, &res); err != nil {
		t.Fatal(err)
	}
	return res.Terminals
}

func waitDetached(t *testing.T, p *peer, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts := p.list(t)
		if len(ts) == 1 && ts[0].TerminalID == id && !ts[0].Attached {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal not detached: %+v", ts)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// After the spawning connection closes the terminal lives on; another
// connection attaches, gets the recent output, then the live output,
// with nothing lost or repeated in between.
func TestReattach(t *testing.T) {
	f := newFixture(t, Config{})
	a := f.connect(t)
	res := a.spawn(t, protocol.SpawnTerminalParams{Cols: 100, Rows: 30})
	id := res.TerminalID
	a.send(t, id, "echo BEFORE$((1+1))\n")
	a.waitOutput(t, id, "BEFORE2")
	a.stop()

	b := f.connect(t)
	waitDetached(t, b, id)
	// protocol.TerminalOutput while detached goes to the scrollback only; a steady stream
	// runs across the attach to test the handoff.
	b.send(t, id, "echo WHILE$((1+1)); i=0; while [ $i -lt 100 ]; do echo tick$i; i=$((i+1)); sleep 0.01; done; echo AFTER$((1+1))\n")
	time.Sleep(300 * time.Millisecond)
	var at protocol.AttachTerminalResult
	if err := b.c.Call(context.Background(), "attach_terminal", protocol.TerminalIDParams{TerminalID: id}, &at); err != nil {
		t.Fatal(err)
	}
	// Live output may be handled here before this goroutine sees the
	// reply (the client's read loop runs its notifications at once); what
	// counts is that it starts exactly where the scrollback ends.
	b.mu.Lock()
	early := b.output(id)
	first, got := b.first[id]
	if !got {
		b.seqs[id] = at.Seq // live output must continue exactly here
	}
	b.mu.Unlock()
	if got && first != at.Seq {
		t.Fatalf("live output began at seq %d, the attach reply says %d (output %q)", first, at.Seq, early)
	}
	sb := string(at.Scrollback)
	if at.PID != res.PID || at.Cols != 100 || at.Rows != 30 || !strings.Contains(sb, "BEFORE2") || !strings.Contains(sb, "WHILE2") {
		t.Fatalf("attach: %+v scrollback %q", at, sb)
	}
	b.waitOutput(t, id, "AFTER2")
	all := sb + b.out(id)
	// Each tick exactly once, in order, across scrollback and live output.
	last := -1
	for _, line := range strings.Split(all, "\r\n") {
		var n int
		if _, err := fmtSscan(line, &n); err != nil {
			continue
		}
		if n != last+1 {
			t.Fatalf("tick %d after tick %d: lost or repeated output", n, last)
		}
		last = n
	}
	if last != 99 {
		t.Fatalf("last tick %d", last)
	}
	// Not held across the call below: the peer's notification handler
	// takes b.mu for output that may still arrive, and the read loop
	// that would deliver list's reply waits on that handler (CI hung
	// here for 10 minutes once).
	b.mu.Lock()
	bad := append([]string(nil), b.bad...)
	b.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("protocol problems: %v", bad)
	}
	if ts := b.list(t); len(ts) != 1 || !ts[0].Attached {
		t.Fatalf("list: %+v", ts)
	}
}

// A detached terminal nobody attaches to is ended after DetachGrace.
func TestDetachGrace(t *testing.T) {
	f := newFixture(t, Config{DetachGrace: 200 * time.Millisecond, KillGrace: 200 * time.Millisecond})
	a := f.connect(t)
	res := a.spawn(t, protocol.SpawnTerminalParams{})
	a.stop()
	deadline := time.Now().Add(5 * time.Second)
	for alive(res.PID) {
		if time.Now().After(deadline) {
			t.Fatal("abandoned terminal still running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := f.connect(t)
	for len(b.list(t)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("abandoned terminal still listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	err := b.c.Call(context.Background(), "attach_terminal", protocol.TerminalIDParams{TerminalID: res.TerminalID}, nil)
	if !rpc.IsCode(err, protocol.CodeNotFound) {
		t.Fatalf("attach after grace: %v", err)
	}
}

type countingHolder struct{ n chan int }

func (h *countingHolder) Hold() func() {
	h.n <- 1
	return func() { h.n <- -1 }
}

// Each live terminal holds the executor; Close ends them all.
func TestHoldAndClose(t *testing.T) {
	h := &countingHolder{n: make(chan int, 16)}
	f := newFixture(t, Config{Hold: h, KillGrace: 200 * time.Millisecond})
	p := f.connect(t)
	r1 := p.spawn(t, protocol.SpawnTerminalParams{})
	r2 := p.spawn(t, protocol.SpawnTerminalParams{})
	if <-h.n+<-h.n != 2 {
		t.Fatal("no hold taken")
	}
	f.svc.Close()
	if <-h.n+<-h.n != -2 {
		t.Fatal("holds not released")
	}
	waitGone(t, r1.PID)
	waitGone(t, r2.PID)
	err := p.c.Call(context.Background(), "spawn_terminal", protocol.SpawnTerminalParams{Cols: 80, Rows: 24, Shell: "/bin/sh"}, nil)
	if !rpc.IsCode(err, protocol.CodeExecutorUnavailable) {
		t.Fatalf("spawn after Close: %v", err)
	}
}

// fmtSscan reads "tickN".
func fmtSscan(line string, n *int) (int, error) {
	return fmt.Sscanf(strings.TrimSpace(line), "tick%d", n)
}
