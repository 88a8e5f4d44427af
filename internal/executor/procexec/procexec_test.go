package procexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

type client struct {
	mux  *swappable
	c    *rpc.Conn
	root string
	mu   sync.Mutex
	outs []protocol.ExecOutput
}

func setup(t testing.TB) *client { return setupWith(t, nil) }

// setupWith is setup with a sandbox policy (its launcher: this test binary).
func setupWith(t testing.TB, box *sandbox.Policy) *client {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := fsroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	svc := &Service{Root: r, Sandbox: box}
	server := rpc.NewMux()
	svc.Register(server)
	cl := &client{root: root}
	mux := rpc.NewMux()
	mux.Register(protocol.MethodExecOutput, func(_ context.Context, req *rpc.Request) (any, error) {
		var o protocol.ExecOutput
		_ = json.Unmarshal(req.Params, &o)
		cl.mu.Lock()
		cl.outs = append(cl.outs, o)
		cl.mu.Unlock()
		return nil, nil
	})
	t.Cleanup(func() { r.Close() }) // after the pair's end
	cl.mux = &swappable{h: mux}
	_, cl.c = rpctest.Pair(t, server, cl.mux, rpc.Options{}, rpc.Options{})
	return cl
}

func (cl *client) exec(ctx context.Context, p protocol.ExecParams) (protocol.ExecResult, string, string, error) {
	cl.mu.Lock()
	cl.outs = nil
	cl.mu.Unlock()
	var res protocol.ExecResult
	err := cl.c.Call(ctx, protocol.MethodExec, p, &res)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out, errOut bytes.Buffer
	for i, o := range cl.outs {
		if o.Seq != int64(i) {
			return res, "", "", errors.New("exec_output out of order")
		}
		if o.Stream == "stdout" {
			out.Write(o.Data)
		} else {
			errOut.Write(o.Data)
		}
	}
	return res, out.String(), errOut.String(), err
}

func TestExecOutputsAndStatus(t *testing.T) {
	cl := setup(t)
	t.Setenv("LISTEN_FDS", "1") // must not reach the child
	t.Setenv("NOTIFY_SOCKET", "/run/x")
	tests := []struct {
		name                 string
		p                    protocol.ExecParams
		code                 int
		signal, stdout, errs string
	}{
		{"stdout", protocol.ExecParams{Argv: []string{"echo", "hello"}}, 0, "", "hello\n", ""},
		{"stderr and exit code", protocol.ExecParams{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}}, 3, "", "", "oops\n"},
		{"signal", protocol.ExecParams{Argv: []string{"sh", "-c", "kill -9 $$"}}, -1, "killed", "", ""},
		{"stdin", protocol.ExecParams{Argv: []string{"cat"}, Stdin: []byte("from stdin")}, 0, "", "from stdin", ""},
		{"cwd", protocol.ExecParams{Argv: []string{"pwd"}, Cwd: "work"}, 0, "", "/work\n", ""},
		{"env", protocol.ExecParams{Argv: []string{"sh", "-c", "echo $FOO ${LISTEN_FDS:-none} ${NOTIFY_SOCKET:-none}"}, Env: map[string]string{"FOO": "bar"}}, 0, "", "bar none none\n", ""},
		{"no shell", protocol.ExecParams{Argv: []string{"echo", "$HOME", ";", "ls"}}, 0, "", "$HOME ; ls\n", ""},
	}
	for _, tc := range tests {
		res, out, errs, err := cl.exec(context.Background(), tc.p)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.name == "cwd" {
			out = strings.TrimPrefix(out, cl.root)
		}
		if res.ExitCode != tc.code || res.Signal != tc.signal || out != tc.stdout || errs != tc.errs {
			t.Errorf("%s: %+v stdout %q stderr %q; want code %d signal %q stdout %q stderr %q",
				tc.name, res, out, errs, tc.code, tc.signal, tc.stdout, tc.errs)
		}
	}
}

func TestExecRefusals(t *testing.T) {
	cl := setup(t)
	for _, tc := range []struct {
		p    protocol.ExecParams
		code int
	}{
		{protocol.ExecParams{Argv: []string{"pwd"}, Cwd: "../"}, protocol.CodePermissionDenied},
		{protocol.ExecParams{Argv: []string{"pwd"}, Cwd: "/etc"}, protocol.CodePermissionDenied},
		{protocol.ExecParams{Argv: []string{"pwd"}, Cwd: "missing"}, protocol.CodeNotFound},
		{protocol.ExecParams{Argv: []string{}}, rpc.CodeInvalidParams},
		{protocol.ExecParams{Argv: []string{"/no/such/program"}}, rpc.CodeInternalError},
	} {
		_, _, _, err := cl.exec(context.Background(), tc.p)
		if !rpc.IsCode(err, tc.code) {
			t.Errorf("%+v: %v, want code %d", tc.p, err, tc.code)
		}
	}
}

func TestLargeOutputInOrder(t *testing.T) {
	cl := setup(t)
	res, out, _, err := cl.exec(context.Background(), protocol.ExecParams{Argv: []string{"sh", "-c", "seq 1 400000"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 400000 || lines[0] != "1" || lines[399999] != "400000" {
		t.Fatalf("got %d lines", len(lines))
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q: output reordered", i, l)
		}
	}
}

// Timeout and cancellation kill the whole group, grandchildren included.
func TestTimeoutAndCancelKillGrandchildren(t *testing.T) {
	cl := setup(t)
	script := "sleep 300 & echo $! > grandchild.pid; wait"
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			pidFile := filepath.Join(cl.root, "work", "grandchild.pid")
			os.Remove(pidFile)
			p := protocol.ExecParams{Argv: []string{"sh", "-c", script}, Cwd: "work"}
			ctx := context.Background()
			if how == "timeout" {
				p.TimeoutMS = 300
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			start := time.Now()
			res, _, _, err := cl.exec(ctx, p)
			switch how {
			case "timeout":
				if err != nil || !res.TimedOut {
					t.Fatalf("timeout: %+v %v", res, err)
				}
			case "cancel":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancel: %v", err)
				}
			}
			pid := readPid(t, pidFile)
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("grandchild %d still alive after %s", pid, how)
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("%s: grandchild gone %s after the start", how, time.Since(start).Round(time.Millisecond))
		})
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	for range 100 {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("grandchild pid file not written")
	return 0
}

// alive: the process exists and is not a zombie (an orphaned grandchild
// stays one until init reaps it).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A group that ignores SIGTERM is killed with SIGKILL after KillGrace.
func TestSIGTERMIgnoredThenKilled(t *testing.T) {
	cl := setup(t)
	pidFile := filepath.Join(cl.root, "work", "stubborn.pid")
	p := protocol.ExecParams{Argv: []string{"sh", "-c", `trap "" TERM; sleep 300 & echo $! > stubborn.pid; wait`}, Cwd: "work", TimeoutMS: 200}
	res, _, _, err := cl.exec(context.Background(), p)
	if err != nil || !res.TimedOut {
		t.Fatalf("%+v %v", res, err)
	}
	pid := readPid(t, pidFile)
	deadline := time.Now().Add(KillGrace + 3*time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGTERM-ignoring grandchild %d survived SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkExecTrue measures exec of /bin/true through the protocol,
// request to result, and reports the median.
func BenchmarkExecTrue(b *testing.B) {
	cl := setup(b)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if _, _, _, err := cl.exec(context.Background(), protocol.ExecParams{Argv: []string{"/bin/true"}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
}

// Backpressure: while the daemon side does not take exec_output, the
// process blocks on its pipe instead of its output piling up in memory;
// once taken, all of it arrives.
func TestBackpressure(t *testing.T) {
	cl := setup(t)
	gate := make(chan struct{})
	var got atomic.Int64
	mux := rpc.NewMux()
	mux.Register(protocol.MethodExecOutput, func(_ context.Context, req *rpc.Request) (any, error) {
		<-gate
		var o protocol.ExecOutput
		_ = json.Unmarshal(req.Params, &o)
		got.Add(int64(len(o.Data)))
		return nil, nil
	})
	cl.swapHandler(t, mux)
	pidFile := filepath.Join(cl.root, "work", "writer.pid")
	const total = 64 << 20 // past what the receiver queues (1024 x 32 KiB) and the socket holds
	done := make(chan error, 1)
	go func() {
		var res protocol.ExecResult
		done <- cl.c.Call(context.Background(), "exec", protocol.ExecParams{
			Argv: []string{"sh", "-c", "echo $$ > writer.pid; exec head -c 67108864 /dev/zero"}, Cwd: "work"}, &res)
	}()
	pid := readPid(t, pidFile)
	time.Sleep(500 * time.Millisecond) // 64 MB would be written in far less, unhindered
	if !alive(pid) {
		t.Fatal("the writer finished while nothing was read: its output was buffered without bound")
	}
	select {
	case err := <-done:
		t.Fatalf("exec returned while its output was not taken: %v", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() != total && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got.Load() != total {
		t.Fatalf("received %d of %d bytes", got.Load(), total)
	}
}

// swappable lets a test replace the client's handler mid-test.
type swappable struct {
	mu sync.Mutex
	h  rpc.Handler
}

func (s *swappable) Handle(ctx context.Context, r *rpc.Request) (any, error) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	return h.Handle(ctx, r)
}

func (cl *client) swapHandler(t *testing.T, h rpc.Handler) {
	t.Helper()
	cl.mux.mu.Lock()
	cl.mux.h = h
	cl.mux.mu.Unlock()
}
