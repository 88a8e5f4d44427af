package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// floodSizes are the load test's floods (issue 26): parallel execs of
// NULs, replays of one big stored task, and alice's prompt whose agent
// writes one big line after another.
type floodSizes struct {
	execs, execBytes      int // parallel execs, bytes of NULs each
	replays               int // concurrent replays of the big task
	bigEvents, bigEventSz int // the big task: events, bytes each
	lines, lineBytes      int // alice's agent: lines, text bytes each
}

// Full sizes (BenchmarkFlood, make bench) and the test's, scaled down so
// that go test stays quick: the shape is the same, the totals smaller.
var (
	floodFull  = floodSizes{execs: 60, execBytes: 8 << 20, replays: 6, bigEvents: 400, bigEventSz: 1_000_000, lines: 400, lineBytes: 500_000}
	floodSmall = floodSizes{execs: 60, execBytes: 1 << 20, replays: 6, bigEvents: 40, bigEventSz: 1_000_000, lines: 40, lineBytes: 500_000}
)

// floodResult is what one run measured.
type floodResult struct {
	peakRSS          int64 // the daemon process's VmHWM, bytes
	idleP99, busyP99 time.Duration
	// floorP99 is GET /v1/health's p99 during the floods: a request that
	// touches neither the store nor an executor, so what any request
	// waits for on this machine while the floods run (CPU, scheduling).
	floorIdleP99, floorP99 time.Duration
}

// TestFloodLoad replays issue 26's floods against a real agor-daemon
// process (direct backend, real executors, a stand-in Claude Code) at
// reduced sizes and prints the daemon's peak RSS and bob's
// session-creation p99 under the floods over his idle p99. Nothing here
// is a wall-clock assertion; the memory bound asserted is generous.
func TestFloodLoad(t *testing.T) {
	r := runFlood(t, floodSmall)
	t.Logf("flood (test sizes): daemon peak RSS (VmHWM) %d MiB; bob's session p99 idle %v, under the floods %v (%.1f×); "+
		"the floor (GET /v1/health) idle %v, under the floods %v: bob's p99 is %.1f× the floor",
		r.peakRSS>>20, r.idleP99, r.busyP99, float64(r.busyP99)/float64(r.idleP99),
		r.floorIdleP99, r.floorP99, float64(r.busyP99)/float64(r.floorP99))
	if r.peakRSS > 1<<30 {
		t.Errorf("the daemon reached %d MiB", r.peakRSS>>20)
	}
}

// BenchmarkFlood is TestFloodLoad at the full sizes: 60 execs of
// 8 MiB of NULs, 6 replays of a 400 MB task, 400 × 500 KB lines from
// alice's agent (make bench).
func BenchmarkFlood(b *testing.B) {
	sz := floodFull
	if testing.Short() { // make bench-smoke: that it runs, not its figures
		sz = floodSmall
	}
	for range b.N {
		r := runFlood(b, sz)
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "daemon-peak-RSS-MiB")
		b.ReportMetric(float64(r.idleP99.Microseconds())/1000, "bob-idle-p99-ms")
		b.ReportMetric(float64(r.busyP99.Microseconds())/1000, "bob-flood-p99-ms")
		b.ReportMetric(float64(r.busyP99)/float64(r.idleP99), "bob-p99-ratio")
		b.ReportMetric(float64(r.floorP99.Microseconds())/1000, "floor-flood-p99-ms")
		b.ReportMetric(float64(r.busyP99)/float64(r.floorP99), "bob-p99/floor")
	}
}

// flood is a running agor-daemon process and what it was given.
type flood struct {
	dir, sock, state string
	cmd              *exec.Cmd
	client           *http.Client
	alice, bob       string
	aliceUID         int
}

func runFlood(t testing.TB, sz floodSizes) floodResult {
	if os.Geteuid() != 0 {
		t.Skip("needs root: alice's and bob's executors run as two accounts")
	}
	f := startFlood(t, sz)
	big := f.bigTask(t, sz)
	f.start(t)
	f.setKey(t)
	idle := f.sessions(t, 200, nil)
	floorIdle := f.health(t, 200, nil)
	stop := make(chan struct{})
	busyC, floorC := make(chan []time.Duration, 1), make(chan []time.Duration, 1)
	go func() { busyC <- f.sessions(t, 0, stop) }()
	go func() { floorC <- f.health(t, 0, stop) }()
	var wg sync.WaitGroup
	for i := range sz.execs {
		wg.Add(1)
		go func() { defer wg.Done(); f.exec(t, sz.execBytes, i%2 == 0) }()
	}
	for range sz.replays {
		wg.Add(1)
		go func() { defer wg.Done(); f.replay(t, big) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); f.prompt(t) }()
	wg.Wait()
	close(stop)
	busy, floor := <-busyC, <-floorC
	return floodResult{peakRSS: f.vmHWM(t), idleP99: p99(idle), busyP99: p99(busy), floorIdleP99: p99(floorIdle), floorP99: p99(floor)}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)*99/100]
}

// daemonBinary builds cmd/agor-daemon once per test binary.
var daemonBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agor-flood-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agor-daemon")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/agor-sh/agor/cmd/agor-daemon").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build agor-daemon: %v\n%s", err, out)
	}
	return bin, nil
})

// startFlood lays out the daemon's files: configuration, a stand-in
// Claude Code that writes sz.lines lines of sz.lineBytes of text, and
// the state directory.
func startFlood(t testing.TB, sz floodSizes) *flood {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-flood")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	alice, aliceUID := target(t)
	f := &flood{dir: dir, sock: filepath.Join(dir, "api.sock"), state: filepath.Join(dir, "state"), alice: alice, aliceUID: aliceUID, bob: "daemon"}
	for _, d := range []string{"work", "state", "x"} {
		_ = os.Mkdir(filepath.Join(dir, d), 0o777)
		_ = os.Chmod(filepath.Join(dir, d), 0o777)
	}
	line := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("x", sz.lineBytes) + `"}]}}` + "\n"
	write(t, filepath.Join(dir, "line"), line, 0o644)
	write(t, filepath.Join(dir, "claude"), fmt.Sprintf(`#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"flood-1"}'
i=0; while [ $i -lt %d ]; do cat %s/line; i=$((i+1)); done
echo '{"type":"result","subtype":"success","session_id":"flood-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r line; do :; done
`, sz.lines, dir), 0o755)
	write(t, filepath.Join(dir, "agents.yaml"), "claude-code:\n  binary: "+filepath.Join(dir, "claude")+"\n", 0o644)
	write(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`execution:
  backend: direct
  min_uid: 1
  socket_path_template: %s/x/{user}.sock
daemon:
  state_dir: %s
quotas:
  max_event_streams_per_user: 32
  max_sessions_per_user: 1000000
`, dir, f.state), 0o644)
	return f
}

// bigTask stores alice's ended task of sz.bigEvents events before the
// daemon starts, through the store as the daemon keeps it.
func (f *flood) bigTask(t testing.TB, sz floodSizes) string {
	t.Helper()
	db, err := store.Open(filepath.Join(f.state, "agor.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sess, err := db.CreateSession(store.Session{ID: "floodsession", UnixUser: f.alice, UID: int64(f.aliceUID), AgenticTool: "claude-code", Cwd: "."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTask(store.Task{ID: "floodbigtask", SessionID: sess.ID, UnixUser: f.alice, UID: int64(f.aliceUID), Prompt: "big", Status: store.Completed, EndedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"type":"text_delta","data":{"text":"` + strings.Repeat("x", sz.bigEventSz) + `"}}`)
	for seq := 0; seq < sz.bigEvents; seq += 20 {
		var batch []apiwire.StoredEvent
		for q := seq; q < min(seq+20, sz.bigEvents); q++ {
			batch = append(batch, apiwire.StoredEvent{TaskID: "floodbigtask", Sequence: int64(q), Timestamp: 1, Type: "text_delta", Data: data})
		}
		if _, err := db.AppendBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	return "floodbigtask"
}

// start runs agor-daemon and waits for its API.
func (f *flood) start(t testing.TB) {
	t.Helper()
	bin, err := daemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	f.cmd = exec.Command(bin, "--config", filepath.Join(f.dir, "config.yaml"), "--listen", f.sock, "--executor", binary,
		"--executor-root", filepath.Join(f.dir, "work"), "--executor-agents", filepath.Join(f.dir, "agents.yaml"),
		"--master-key", filepath.Join(f.dir, "master.key"), "--log-format", "text", "--log-level", "warn")
	logs, err := os.Create(filepath.Join(f.dir, "daemon.log")) // not ours: executors keep it open after
	if err != nil {
		t.Fatal(err)
	}
	f.cmd.Stderr = logs
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs.Close()
	t.Cleanup(f.stop)
	f.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", f.sock)
	}}}
	for i := 0; ; i++ {
		if resp, err := f.client.Get("http://agor/v1/health"); err == nil {
			resp.Body.Close()
			return
		}
		if i > 200 {
			t.Fatal("agor-daemon did not come up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop asks the daemon to stop as systemd would, and kills it if it has
// not within 10 s.
func (f *flood) stop() {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
}

func (f *flood) post(t testing.TB, path string, body any) (*http.Response, error) {
	b, _ := json.Marshal(body)
	return f.client.Post("http://agor"+path, "application/json", bytes.NewReader(b))
}

func (f *flood) setKey(t testing.TB) {
	b, _ := json.Marshal(map[string]any{"value": "sk-ant-flood-0000", "scope": "daemon"})
	req, _ := http.NewRequest("PUT", "http://agor/v1/credentials/ANTHROPIC_API_KEY", bytes.NewReader(b))
	resp, err := f.client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set key: %v %v", resp, err)
	}
	resp.Body.Close()
}

// sessions times bob's POST /v1/sessions: n of them, or until stop.
func (f *flood) sessions(t testing.TB, n int, stop chan struct{}) []time.Duration {
	return timed(t, "bob's session", http.StatusCreated, n, stop, func() (*http.Response, error) {
		return f.post(t, "/v1/sessions", map[string]any{"unix_user": f.bob, "agentic_tool": "claude-code", "cwd": "."})
	})
}

// health times GET /v1/health, the floor: like sessions.
func (f *flood) health(t testing.TB, n int, stop chan struct{}) []time.Duration {
	return timed(t, "health", http.StatusOK, n, stop, func() (*http.Response, error) {
		return f.client.Get("http://agor/v1/health")
	})
}

// timed times n requests (0: until stop, at a person's pace rather than
// a flood of their own), each answered with want.
func timed(t testing.TB, what string, want, n int, stop chan struct{}, do func() (*http.Response, error)) []time.Duration {
	var out []time.Duration
	for i := 0; n == 0 || i < n; i++ {
		select {
		case <-stop:
			return out
		default:
		}
		t0 := time.Now()
		resp, err := do()
		if err != nil || resp.StatusCode != want {
			t.Errorf("%s: %v %v", what, resp, err)
			return out
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, time.Since(t0))
		if n == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out
}

// exec runs head -c size /dev/zero as alice, streamed as agorctl reads
// it or as one JSON reply as an older client would.
func (f *flood) exec(t testing.TB, size int, streamed bool) {
	body := apiwire.ExecBody{Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}, Cwd: "."}
	if streamed {
		var out countingWriter
		if _, err := apiclient.New(f.sock).Exec(context.Background(), f.alice, body, &out, io.Discard); err != nil || out.n.Load() != int64(size) {
			t.Errorf("streamed exec: %d bytes, %v", out.n.Load(), err)
		}
		return
	}
	resp, err := f.post(t, "/v1/executors/"+f.alice+"/exec", body)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("exec: %v %v", resp, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// replay reads the big task's events to the end.
func (f *flood) replay(t testing.TB, task string) {
	resp, err := f.client.Get("http://agor/v1/tasks/" + task + "/events")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("replay: %v %v", resp, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// prompt runs alice's flooding prompt to its end.
func (f *flood) prompt(t testing.TB) {
	resp, err := f.post(t, "/v1/executors/"+f.alice+"/prompt", map[string]any{"agentic_tool": "claude-code", "prompt": "flood", "cwd": ".", "permission_mode": "bypassPermissions", "timeout_ms": 600000})
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("prompt: %v %v", resp, err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var last string
	for sc.Scan() {
		last = sc.Text()
	}
	if !strings.Contains(last, `"result"`) {
		t.Errorf("prompt ended with %.300s", last)
	}
}

// vmHWM is the daemon process's peak resident memory.
func (f *flood) vmHWM(t testing.TB) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", f.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
