package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// heapPeak samples the Go heap in use until stop is called, and returns
// the most it grew over where it was at the start. The daemon runs in
// this process, so the clients' memory counts too: they read as they go.
func heapPeak() (stop func() int64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done, out := make(chan struct{}), make(chan int64)
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				out <- int64(peak) - int64(base)
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	return func() int64 { close(done); return <-out }
}

// countingWriter counts bytes and whether each was a NUL.
type countingWriter struct{ n, other atomic.Int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	if k := len(p) - bytes.Count(p, []byte{0}); k > 0 {
		c.other.Add(int64(k))
	}
	return len(p), nil
}

// TestExecOutputBounded: 16 parallel execs of 8 MiB of NULs each, read
// as one JSON reply (the old shape), and 4 streamed as agorctl reads
// them. The JSON replies hold at most 4 MiB a stream and 16 MiB for the
// person together, the rest counted as dropped; the streams deliver
// every byte and hold one chunk. Before, each JSON reply held its output
// three times, JSON-escaped once (NUL: six bytes), 16 × 32 MiB.
func TestExecOutputBounded(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	const size = 8 << 20
	argv := []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}
	peak := heapPeak()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); h.execJSON(t, name, argv, size) }()
	}
	c := apiclient.New(h.sock)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errs countingWriter
			res, err := c.Exec(context.Background(), name, apiwire.ExecBody{Argv: argv, Cwd: "."}, &out, &errs)
			if err != nil || res.ExitCode != 0 || out.n.Load() != size || out.other.Load() != 0 {
				t.Errorf("streamed exec: %+v %v; %d bytes (%d not NUL), want %d NULs", res, err, out.n.Load(), out.other.Load(), size)
			}
		}()
	}
	wg.Wait()
	grew := peak()
	t.Logf("the Go heap grew by at most %d MiB", grew>>20)
	if grew > 192<<20 {
		t.Errorf("the heap grew by %d MiB serving 160 MiB of output; want it bounded", grew>>20)
	}
}

// execJSON runs argv through the JSON reply and checks that what it got
// and what it was told was dropped add up to size, reading the reply as
// it comes.
func (h *harness) execJSON(t *testing.T, user string, argv []string, size int64) {
	b, _ := json.Marshal(apiwire.ExecBody{Argv: argv, Cwd: "."})
	resp, err := h.client.Post("http://agor/v1/executors/"+user+"/exec", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	var tail bytes.Buffer
	n, err := io.Copy(&tailWriter{buf: &tail}, resp.Body)
	nuls := (n - int64(tail.Len())) / 6 // \u0000 each; the tail is the rest
	var dropped int64
	if i := strings.Index(tail.String(), `"output_dropped_bytes":`); i >= 0 {
		fmt.Sscan(tail.String()[i+len(`"output_dropped_bytes":`):], &dropped)
	}
	if err != nil || resp.StatusCode != 200 || dropped == 0 || nuls > 4<<20 {
		t.Errorf("JSON exec: %d %v; %d bytes, dropped %d", resp.StatusCode, err, n, dropped)
	}
}

// tailWriter keeps the last 256 bytes written.
type tailWriter struct{ buf *bytes.Buffer }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if w.buf.Len() > 256 {
		b := append([]byte(nil), w.buf.Bytes()[w.buf.Len()-256:]...)
		w.buf.Reset()
		w.buf.Write(b)
	}
	return len(p), nil
}

// bigTask stores an ended task of n events of about size bytes each, as
// its agent would have sent them, straight into the daemon's store.
func (h *harness) bigTask(t testing.TB, user string, n, size int) string {
	t.Helper()
	sess, err := h.d.Store().CreateSession(store.Session{ID: newTestID(), UnixUser: user, AgenticTool: "claude-code", Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	task := newTestID()
	if _, err := h.d.Store().CreateTask(store.Task{ID: task, SessionID: sess.ID, UnixUser: user, Prompt: "big", Status: store.Completed, EndedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"type":"text_delta","data":{"text":"` + strings.Repeat("x", size) + `"}}`)
	for seq := 0; seq < n; seq += 20 {
		var batch []apiwire.StoredEvent
		for q := seq; q < min(seq+20, n); q++ {
			batch = append(batch, apiwire.StoredEvent{TaskID: task, Sequence: int64(q), Timestamp: 1, Type: "text_delta", Data: data})
		}
		if _, err := h.d.Store().AppendBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// TestReplayUnreadHoldsNoTurn: a person's replays are encoded two at a
// time (turns.go), and a stream whose client does not read must not keep
// its turn. Two replays left unread, their sockets full, then a third read
// whole: it ends. Before, the two held both turns while blocked writing
// and the third waited for good (TestReplayBoundedAndCounted, reading its
// streams in order, hung 11 minutes in a CI run). The deadline is a hang's
// bound: the read takes seconds.
func TestReplayUnreadHoldsNoTurn(t *testing.T) {
	h := startWith(t, nil, func(c *config.Config) { c.Quotas.MaxEventStreams = 3 })
	name, _ := target(t)
	task := h.bigTask(t, name, 30, 1<<20-200)
	for range 2 {
		resp, err := h.client.Get("http://agor/v1/tasks/" + task + "/events")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("replay: %v %v", resp, err)
		}
		defer resp.Body.Close()
	}
	time.Sleep(500 * time.Millisecond) // each has taken a turn and filled its socket
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://agor/v1/tasks/"+task+"/events", nil)
	resp, err := h.client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the third replay: %v %v", resp, err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n < 30e6 {
		t.Errorf("the third replay, beside two unread: %d bytes, %v; want the whole task (two streams that do not read hold no turn)", n, err)
	}
}

// TestReplayBoundedAndCounted: replays of a task whose events hold 60 MB
// read the store a page of about 1 MiB at a time (before: 500 events at
// once, each replay the whole task here), and count toward the person's
// max_event_streams_per_user as follows do: with a bound of 3, a fourth
// replay while three are open is refused.
func TestReplayBoundedAndCounted(t *testing.T) {
	h := startWith(t, nil, func(c *config.Config) { c.Quotas.MaxEventStreams = 3 })
	name, _ := target(t)
	task := h.bigTask(t, name, 60, 1<<20-200)
	peak := heapPeak()
	var open []*http.Response
	for range 3 { // open, unread: each handler waits on a full socket
		resp, err := h.client.Get("http://agor/v1/tasks/" + task + "/events")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("replay: %v %v", resp, err)
		}
		open = append(open, resp)
	}
	time.Sleep(200 * time.Millisecond)
	code, out := h.do(t, "GET", "/v1/tasks/"+task+"/events", nil)
	if code != http.StatusTooManyRequests || !strings.Contains(fmt.Sprint(out), "max_event_streams_per_user") {
		t.Errorf("a fourth replay: %d %v; want 429 naming max_event_streams_per_user", code, out)
	}
	for _, resp := range open {
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n < 60e6 {
			t.Errorf("replay read %d bytes, %v", n, err)
		}
	}
	grew := peak()
	t.Logf("the Go heap grew by at most %d MiB", grew>>20)
	if grew > 96<<20 {
		t.Errorf("the heap grew by %d MiB for 3 replays of a 60 MB task; want pages of about 1 MiB", grew>>20)
	}
}
