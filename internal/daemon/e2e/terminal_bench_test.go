package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// benchBytes is what each throughput round streams.
const benchBytes = 200_000_000

// generator is the program output for every path: the PTY in raw mode
// (no newline translation, no echo), then zeros, as fast as head writes.
var generator = "stty raw -echo; head -c " + strconv.Itoa(benchBytes) + " /dev/zero"

// BenchmarkTerminal prints, from one run, the terminal output throughput
// of the raw PTY floor (a plain Go reader of the PTY, no protocol), the
// daemon API's raw stream (executor → daemon → client, binary frames) and
// its older NDJSON stream (base64 in JSON), with their ratios to the
// floor; then keystroke echo p50/p99 for the floor and the two streams.
// Medians over the rounds (-benchtime Nx).
func BenchmarkTerminal(b *testing.B) {
	h := start(b)
	name, _ := target(b)
	c := apiclient.New(h.sock)
	var floor, raw, js, rawRatio, jsRatio []float64
	var cpuFloor, cpuRaw, cpuJS []cpuUse
	for b.Loop() {
		fl, cf := mbps(b, floorRound)
		rw, cr := mbps(b, func(tb testing.TB) (int64, int) { return apiRound(tb, c, name, true) })
		jj, cj := mbps(b, func(tb testing.TB) (int64, int) { return apiRound(tb, c, name, false) })
		floor, raw, js = append(floor, fl), append(raw, rw), append(js, jj)
		rawRatio, jsRatio = append(rawRatio, rw/fl), append(jsRatio, jj/fl)
		cpuFloor, cpuRaw, cpuJS = append(cpuFloor, cf), append(cpuRaw, cr), append(cpuJS, cj)
	}
	f, r, j := median(floor), median(raw), median(js)
	b.Logf("terminal output, %d MB, median of %d rounds: PTY floor %.0f MB/s; API raw stream %.0f MB/s (%.2fx floor; median of the rounds' ratios %.2fx); API NDJSON stream %.0f MB/s (%.2fx floor; rounds' ratios %.2fx)",
		benchBytes/1_000_000, len(floor), f, r, r/f, median(rawRatio), j, j/f, median(jsRatio))
	b.Logf("CPU per MB (median): floor reader %s; raw: %s; NDJSON: %s; load average %s",
		medianCPU(cpuFloor), medianCPU(cpuRaw), medianCPU(cpuJS), loadavg())
	b.ReportMetric(f, "floor-MB/s")
	b.ReportMetric(r, "raw-MB/s")
	b.ReportMetric(r/f, "raw/floor")
	b.ReportMetric(j, "ndjson-MB/s")
	b.ReportMetric(j/f, "ndjson/floor")

	const n = 400
	fe := floorEcho(b, n)
	re := apiEcho(b, c, name, true, n)
	je := apiEcho(b, c, name, false, n)
	b.Logf("keystroke echo, %d keys: PTY floor p50 %v p99 %v; API raw p50 %v p99 %v (p50 %.2fx floor); API NDJSON p50 %v p99 %v (p50 %.2fx floor)",
		n, pct(fe, 50), pct(fe, 99), pct(re, 50), pct(re, 99), ratio(re, fe), pct(je, 50), pct(je, 99), ratio(je, fe))
	rl := relayEcho(b, n)
	b.Logf("through a bare relay process (blocking threads, no protocol) between client and PTY: p50 %v p99 %v (%.2fx floor) — the least a path can be in which the executor, not the client, reads the PTY; API raw p50 %.2fx that",
		pct(rl, 50), pct(rl, 99), ratio(rl, fe), ratio(re, rl))
	b.ReportMetric(float64(pct(rl, 50).Microseconds()), "relay-echo-p50-µs")
	b.ReportMetric(ratio(re, rl), "raw-echo/relay")
	b.ReportMetric(float64(pct(fe, 50).Microseconds()), "floor-echo-p50-µs")
	b.ReportMetric(float64(pct(re, 50).Microseconds()), "raw-echo-p50-µs")
	b.ReportMetric(ratio(re, fe), "raw-echo/floor")
}

// mbps times round, which reports the bytes it carried and the executor's
// pid (0: none), and measures the CPU time this process (the reader: the
// floor's, or the daemon's and the client's) and the executor used.
func mbps(b *testing.B, round func(testing.TB) (int64, int)) (float64, cpuUse) {
	self0, t0 := selfCPU(), time.Now()
	n, exe := round(b)
	d := time.Since(t0)
	use := cpuUse{self: selfCPU() - self0}
	if exe > 0 {
		use.exe = exeCPU[exe] // counted by apiRound while the executor ran the round
	}
	if n < benchBytes {
		b.Fatalf("%d of %d bytes", n, benchBytes)
	}
	mb := float64(n) / 1e6
	use.self, use.exe = use.self/time.Duration(mb), use.exe/time.Duration(mb)
	return mb / d.Seconds(), use
}

// cpuUse is CPU time per MB carried.
type cpuUse struct{ self, exe time.Duration }

func medianCPU(us []cpuUse) string {
	var self, exe []float64
	for _, u := range us {
		self, exe = append(self, float64(u.self)), append(exe, float64(u.exe))
	}
	s, e := time.Duration(median(self)), time.Duration(median(exe))
	if e == 0 {
		return s.Round(time.Microsecond).String()
	}
	return fmt.Sprintf("daemon+client %s, executor %s", s.Round(time.Microsecond), e.Round(time.Microsecond))
}

// exeCPU is the CPU time an executor (by pid) used in the last round.
var exeCPU = map[int]time.Duration{}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU reads a process's user+system time and its parent from
// /proc/PID/stat (clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * 10 * time.Millisecond, ppid
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// floorRound runs the generator on a PTY of its own and reads the master
// until the program is gone: the most a terminal path could carry.
func floorRound(tb testing.TB) (int64, int) {
	cmd := exec.Command("/bin/sh", "-c", generator)
	m, err := pty.Start(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	n, err := io.CopyBuffer(io.Discard, m, make([]byte, 32<<10))
	if err != nil && !errors.Is(err, syscall.EIO) {
		tb.Fatal(err)
	}
	_ = cmd.Wait()
	return n, 0
}

// apiRound spawns a shell through the API, attaches (raw or NDJSON) and
// runs the generator, then exit: Copy returns with the shell.
func apiRound(tb testing.TB, c *apiclient.Client, name string, raw bool) (int64, int) {
	t, shell := attachNew(tb, c, name, raw)
	defer t.Close()
	_, exe := procCPU(shell) // the shell's parent
	exe0, _ := procCPU(exe)
	if err := t.Send(apiwire.Frame{Input: []byte(generator + "; exit\n")}); err != nil {
		tb.Fatal(err)
	}
	var cw countWriter
	if _, err := t.Copy(&cw); err != nil {
		tb.Fatal(err)
	}
	exe1, _ := procCPU(exe)
	exeCPU[exe] = exe1 - exe0
	return cw.n, exe
}

// attachNew spawns a shell through the API and attaches to it; it returns
// the shell's pid too.
func attachNew(tb testing.TB, c *apiclient.Client, name string, raw bool) (*apiclient.Terminal, int) {
	ctx := context.Background()
	var res protocol.SpawnTerminalResult
	p := protocol.SpawnTerminalParams{Cwd: ".", Shell: "/bin/sh", Cols: 80, Rows: 24}
	if err := c.Do(ctx, "POST", "/v1/executors/"+name+"/terminals", p, &res); err != nil {
		tb.Fatal(err)
	}
	id := res.TerminalID
	attach := c.AttachTerminalNDJSON
	if raw {
		attach = c.AttachTerminal
	}
	t, err := attach(ctx, name, id)
	if err != nil {
		tb.Fatal(err)
	}
	return t, res.PID
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// floorEcho writes one byte at a time to cat on a raw PTY and times each
// until it is read back from the master.
func floorEcho(b *testing.B, n int) []time.Duration {
	cmd := exec.Command("/bin/sh", "-c", "stty raw -echo; echo R; exec cat")
	m, err := pty.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { m.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 64)
	readUntil(b, m, "R\n") // cat is about to run
	lat := make([]time.Duration, 0, n)
	for i := range n {
		c := byte('a' + i%26)
		t0 := time.Now()
		if _, err := m.Write([]byte{c}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(m, buf[:1]); err != nil || buf[0] != c {
			b.Fatalf("echo %q %v, want %q", buf[0], err, c)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat
}

// apiEcho is floorEcho through the API's stream. As in agorctl, Copy
// runs in the reading goroutine; its writer times each echo and sends
// the next key.
func apiEcho(b *testing.B, c *apiclient.Client, name string, raw bool, n int) []time.Duration {
	t, _ := attachNew(b, c, name, raw)
	defer t.Close()
	_ = t.Send(apiwire.Frame{Input: []byte("stty raw -echo; echo R$((1+1)); exec cat\n")})
	e := &echoer{b: b, t: t, n: n, marker: "R2\n"}
	if _, err := t.Copy(e); !errors.Is(err, errEchoDone) {
		b.Fatalf("echo: %v", err)
	}
	return e.lat
}

var errEchoDone = errors.New("enough keys")

// echoer waits for marker, then sends a key per echo received.
type echoer struct {
	b      *testing.B
	t      *apiclient.Terminal
	n      int
	marker string
	seen   string
	key    byte
	t0     time.Time
	lat    []time.Duration
}

func (e *echoer) Write(p []byte) (int, error) {
	if e.key == 0 {
		e.seen += string(p)
		if !strings.HasSuffix(e.seen, e.marker) {
			return len(p), nil
		}
		time.Sleep(50 * time.Millisecond) // cat runs
		return len(p), e.send()
	}
	if len(p) != 1 || p[0] != e.key {
		e.b.Fatalf("echo %q, want %q", p, e.key)
	}
	e.lat = append(e.lat, time.Since(e.t0))
	if len(e.lat) == e.n {
		_ = e.t.Send(apiwire.Frame{Terminate: true})
		return len(p), errEchoDone
	}
	return len(p), e.send()
}

func (e *echoer) send() error {
	e.key = byte('a' + len(e.lat)%26)
	e.t0 = time.Now()
	return e.t.Send(apiwire.Frame{Input: []byte{e.key}})
}

// readUntil reads r up to and including s, one byte at a time, so that
// nothing after it is consumed.
func readUntil(b *testing.B, r io.Reader, s string) {
	var seen strings.Builder
	one := make([]byte, 1)
	for !strings.HasSuffix(seen.String(), s) {
		if _, err := io.ReadFull(r, one); err != nil {
			b.Fatalf("waiting for %q: %v (read %q)", s, err, seen.String())
		}
		seen.WriteByte(one[0])
	}
	time.Sleep(50 * time.Millisecond) // cat runs
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ratio(a, b []time.Duration) float64 { return float64(pct(a, 50)) / float64(pct(b, 50)) }

// relayEnv, set, makes the test binary the relay of relayEcho.
const relayEnv = "AGOR_BENCH_PTY_RELAY"

func init() {
	if os.Getenv(relayEnv) == "1" {
		ptyRelay()
		os.Exit(0)
	}
}

// ptyRelay is the least a relay between a client (fd 3) and a PTY can be:
// cat on the PTY, and one OS thread a direction in blocking reads and
// writes, with no protocol and no Go scheduler between.
func ptyRelay() {
	cmd := exec.Command("/bin/sh", "-c", "stty raw -echo; exec cat")
	m, err := pty.Start(cmd)
	if err != nil {
		os.Exit(1)
	}
	mfd := int(m.Fd()) // blocking from here on
	_ = syscall.SetNonblock(3, false)
	copyFD := func(dst, src int) {
		runtime.LockOSThread()
		buf := make([]byte, 4096)
		for {
			n, err := syscall.Read(src, buf)
			if n <= 0 || err != nil {
				return
			}
			if _, err := syscall.Write(dst, buf[:n]); err != nil {
				return
			}
		}
	}
	go copyFD(mfd, 3)
	_, _ = syscall.Write(3, []byte{'R'}) // ready
	copyFD(3, mfd)
}

// relayEcho is floorEcho through ptyRelay in a process of its own: the
// echo of any path in which a process other than the client (the
// executor) reads the PTY's output can be no faster on this machine.
func relayEcho(b *testing.B, n int) []time.Duration {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	x, y := os.NewFile(uintptr(fds[0]), "x"), os.NewFile(uintptr(fds[1]), "y")
	defer x.Close()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	relay := exec.Command(self)
	relay.Env = append(os.Environ(), relayEnv+"=1")
	relay.ExtraFiles = []*os.File{y}
	if err := relay.Start(); err != nil {
		b.Fatal(err)
	}
	y.Close()
	defer func() { x.Close(); _ = relay.Process.Kill(); _ = relay.Wait() }()
	one := make([]byte, 1)
	if _, err := io.ReadFull(x, one); err != nil {
		b.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // cat runs
	lat := make([]time.Duration, 0, n)
	for i := range n {
		c := byte('a' + i%26)
		t0 := time.Now()
		if _, err := x.Write([]byte{c}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(x, one); err != nil || one[0] != c {
			b.Fatalf("relayed echo %q %v, want %q", one[0], err, c)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat
}
