package terminal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// The raw stream under load, many times over: every byte the program
// writes arrives once and in order, with the host's cores busy, the reader
// taking odd-sized reads and stalling now and then (backpressure). The
// output is seq's, so a lost, doubled or reordered piece shows.
func TestRawStress(t *testing.T) {
	rounds, lines := 12, 60_000 // ~350 KiB a round
	if testing.Short() {
		rounds = 3
	}
	stop := burnCPUs(t)
	defer stop()
	f := newFixture(t, Config{})
	p := f.connect(t)
	want := seqOutput(lines)
	for i := range rounds {
		id := p.spawn(t, protocol.SpawnTerminalParams{}).TerminalID
		e, err := f.attachRaw(t, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = e.c.SetReadDeadline(time.Now().Add(60 * time.Second))
		fmt.Fprintf(e.c, "stty raw -echo; echo GO$((1+1)); seq 1 %d; echo END$((1+1))\n", lines)
		got := e.slowUntil(t, rand.New(rand.NewPCG(uint64(i), 7)), "END2")
		start := bytes.Index(got, []byte("GO2\n"))
		end := bytes.LastIndex(got, []byte("END2"))
		if start < 0 || end < start {
			t.Fatalf("round %d: markers not found in %d bytes", i, len(got))
		}
		if body := got[start+len("GO2\n") : end]; !bytes.Equal(body, want) {
			t.Fatalf("round %d: %d bytes between the markers, want %d; first difference at %d", i, len(body), len(want), firstDiff(body, want))
		}
	}
}

// slowUntil reads like a slow client until s arrives: reads of 1 to
// 8192 bytes, and now and then a pause that fills the pipeline.
func (e *rawEnd) slowUntil(t *testing.T, rnd *rand.Rand, s string) []byte {
	t.Helper()
	buf := make([]byte, 8192)
	for !bytes.Contains(e.got, []byte(s)) {
		if rnd.IntN(64) == 0 {
			time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
		}
		n, err := e.r.Read(buf[:1+rnd.IntN(len(buf))])
		e.got = append(e.got, buf[:n]...)
		if err != nil {
			t.Fatalf("stream ended after %d bytes: %v", len(e.got), err)
		}
	}
	return e.got
}

// burnCPUs keeps every core busy until stop is called.
func burnCPUs(t *testing.T) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := 0; ; x++ {
				select {
				case <-done:
					return
				default:
				}
				if x%1024 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

func seqOutput(n int) []byte {
	var b []byte
	for i := 1; i <= n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
