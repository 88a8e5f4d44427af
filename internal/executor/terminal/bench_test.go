package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// sink is a daemon-side handler that decodes terminal_output and counts
// bytes, watching for a marker at the end of the stream.
type sink struct {
	gate   chan struct{} // when non-nil, output waits for it
	bytes  atomic.Int64
	mu     sync.Mutex
	tail   []byte
	marker []byte
	found  chan struct{}
}

func (s *sink) Handle(_ context.Context, r *rpc.Request) (any, error) {
	if r.Method != protocol.MethodTerminalOutput {
		return nil, nil
	}
	if s.gate != nil {
		<-s.gate
	}
	var o protocol.TerminalOutput
	if err := json.Unmarshal(r.Params, &o); err != nil {
		return nil, err
	}
	s.bytes.Add(int64(len(o.Data)))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tail = append(s.tail, o.Data...)
	if len(s.tail) > 64 {
		s.tail = s.tail[len(s.tail)-64:]
	}
	if s.marker != nil && bytes.Contains(s.tail, s.marker) {
		s.marker = nil
		close(s.found)
	}
	return nil, nil
}

func (s *sink) expect(marker string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tail, s.marker, s.found = nil, []byte(marker), make(chan struct{})
	return s.found
}

// Backpressure: while the daemon does not take terminal_output, the
// program blocks on the PTY instead of its output piling up; once taken,
// all of it arrives.
func TestBackpressure(t *testing.T) {
	f := newFixture(t, Config{})
	s := &sink{gate: make(chan struct{})}
	p := f.connectWith(t, s)
	const total = 64 << 20 // past what the receiver queues (1024 notifications) and the socket holds
	id := p.spawn(t, protocol.SpawnTerminalParams{Shell: "/bin/sh"})
	done := s.expect("END2")
	p.send(t, id.TerminalID, "stty raw -echo; head -c 67108864 /dev/zero; echo END$((1+1))\n")
	time.Sleep(700 * time.Millisecond) // 64 MiB would pass in far less, unhindered
	if got := s.bytes.Load(); got != 0 {
		t.Fatalf("%d bytes delivered through a closed gate", got)
	}
	close(s.gate)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d bytes arrived", s.bytes.Load())
	}
	if got := s.bytes.Load(); got < total {
		t.Fatalf("received %d of %d bytes", got, total)
	}
}

// BenchmarkOutputThroughput streams 200 MB of program output through the
// PTY, the executor and the protocol to a daemon side that decodes it.
func BenchmarkOutputThroughput(b *testing.B) {
	f := newFixture(b, Config{})
	s := &sink{}
	p := f.connectWith(b, s)
	id := p.spawn(b, protocol.SpawnTerminalParams{Shell: "/bin/sh"}).TerminalID
	ready := s.expect("READY2")
	p.send(b, id, "stty raw -echo; echo READY$((1+1))\n")
	<-ready
	const n = 200_000_000
	b.SetBytes(n)
	for b.Loop() {
		done := s.expect("END2")
		p.send(b, id, "head -c 200000000 /dev/zero; echo END$((1+1))\n")
		<-done
	}
}

// BenchmarkKeystrokeEcho sends one byte at a time to cat on a raw PTY
// and measures until it comes back as terminal_output.
func BenchmarkKeystrokeEcho(b *testing.B) {
	f := newFixture(b, Config{})
	echoed := make(chan byte, 16)
	h := rpc.HandlerFunc(func(_ context.Context, r *rpc.Request) (any, error) {
		var o protocol.TerminalOutput
		if json.Unmarshal(r.Params, &o) == nil {
			for _, c := range o.Data {
				echoed <- c
			}
		}
		return nil, nil
	})
	p := f.connectWith(b, h)
	id := p.spawn(b, protocol.SpawnTerminalParams{Shell: "/bin/sh"}).TerminalID
	p.send(b, id, "stty raw -echo; exec cat\n")
	// Wait for cat: probe until a probe byte comes back alone.
	for ok := false; !ok; {
		p.send(b, id, "\x01")
		timeout := time.After(200 * time.Millisecond)
	drain:
		for {
			select {
			case c := <-echoed:
				ok = c == 1
			case <-timeout:
				break drain
			}
		}
	}
	lat := make([]time.Duration, 0, 4096)
	for i := 0; b.Loop(); i++ {
		c := byte('a' + i%26)
		t0 := time.Now()
		p.send(b, id, string([]byte{c}))
		if got := <-echoed; got != c {
			b.Fatalf("echoed %q, want %q", got, c)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRawOutputThroughput streams 200 MB of program output through
// the PTY and the executor's raw stream to a plain reader.
func BenchmarkRawOutputThroughput(b *testing.B) {
	f := newFixture(b, Config{})
	p := f.connect(b)
	id := p.spawn(b, protocol.SpawnTerminalParams{Shell: "/bin/sh"}).TerminalID
	e, err := f.attachRaw(b, id, 0)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = e.c.Write([]byte("stty raw -echo; echo READY$((1+1))\n"))
	e.until(b, 0, "READY2\n")
	const n = 200_000_000
	b.SetBytes(n)
	buf := make([]byte, 64<<10)
	for b.Loop() {
		_, _ = e.c.Write([]byte("head -c 200000000 /dev/zero; echo END$((1+1))\n"))
		got, tail := 0, []byte{}
		for !bytes.Contains(tail, []byte("END2\n")) {
			k, err := e.r.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += k
			tail = append(tail, buf[:k]...)
			tail = tail[max(0, len(tail)-16):]
		}
		if got < n {
			b.Fatalf("%d of %d bytes", got, n)
		}
	}
}
