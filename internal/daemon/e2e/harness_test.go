package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/logging"
)

// The harness: a daemon booted whole in this process (daemon.New, Run)
// with the direct backend, real executors (the agor-executor exectest
// builds) on private sockets, and an HTTP client on its API socket.

// binary is agor-executor, built once for the test binary (exectest.Main).
var binary string

func TestMain(m *testing.M) {
	if req := os.Getenv("AGOR_TEST_HTTP_AS"); req != "" {
		os.Exit(httpAs(req))
	}
	if spec := os.Getenv("AGOR_TEST_DOOR_AS"); spec != "" {
		os.Exit(doorChild(spec))
	}
	exectest.Main(m, &binary)
}

// target is the account the executors run as (agortest under root) and
// its uid.
func target(t testing.TB) (string, int) { return exectest.Target(t) }

// harness is one running daemon and a client of its API.
type harness struct {
	client *http.Client
	opts   daemon.Options         // as New had them: restart (fulldisk_test.go) uses them again
	logs   *exectest.LockedBuffer // what the daemon logged
	d      *daemon.Daemon
	sock   string
	work   string
	state  string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// orphanGrace is the daemons' api.Server.OrphanGrace in these tests.
const orphanGrace = 500 * time.Millisecond

// start runs the daemon with the direct backend on a private socket.
func start(t testing.TB) *harness { return startWith(t, nil, nil) }

// startWith is start with the executors' agents.yaml written by agents
// (given the work directory) and the configuration changed by tune, each
// when not nil.
func startWith(t testing.TB, agents func(work string) string, tune func(*config.Config)) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-daemon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	work := filepath.Join(dir, "work")
	_ = os.Mkdir(work, 0o777)
	_ = os.Chmod(work, 0o777)
	cfg := config.Default()
	cfg.Execution.Backend = "direct"
	cfg.Execution.MinUID = 1
	cfg.Execution.SocketPathTemplate = filepath.Join(dir, "x", "{user}.sock")
	cfg.Daemon.StateDir = filepath.Join(dir, "state")
	cfg.Gateway.SocketPath = filepath.Join(dir, "gateway.sock")
	if tune != nil {
		tune(&cfg)
	}
	_ = os.Mkdir(cfg.Daemon.StateDir, 0o700)
	keyPath := filepath.Join(dir, "master.key")
	if err := credstore.GenerateMasterKey(keyPath); err != nil {
		t.Fatal(err)
	}
	key, err := credstore.ReadMasterKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	logs := &exectest.LockedBuffer{}
	log := logging.New("agor-daemon", logging.Text, slog.LevelInfo, io.MultiWriter(os.Stderr, logs))
	// The executors read the same configuration, as agor-executor reads
	// /etc/agor/config.yaml under systemd.
	cfgPath := filepath.Join(dir, "config.yaml")
	if b, err := yaml.Marshal(cfg); err != nil || os.WriteFile(cfgPath, b, 0o644) != nil {
		t.Fatalf("config: %v", err)
	}
	o := daemon.Options{Config: cfg, ConfigPath: cfgPath, Executor: binary, Root: work, MasterKey: key, Listener: ln, Log: log}
	if cfg.Gateway.Enabled {
		o.Gateway = listenPublic(t, cfg.Gateway.SocketPath)
	}
	if agents != nil {
		o.Agents = filepath.Join(dir, "agents.yaml")
		if err := os.WriteFile(o.Agents, []byte(agents(work)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := daemon.New(o)
	if err != nil {
		t.Fatal(err)
	}
	d.Server().OrphanGrace = orphanGrace
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{d: d, opts: o, logs: logs, sock: sock, work: work, state: cfg.Daemon.StateDir, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- d.Run(ctx) }()
	t.Cleanup(h.stop)
	h.client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	return h
}

// listenPublic listens on a Unix socket anyone may connect to (the
// executor runs as another account), as agor-daemon.socket's are.
func listenPublic(t testing.TB, path string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	return ln
}

func (h *harness) stop() {
	h.once.Do(func() {
		h.cancel()
		if err := <-h.done; err != nil {
			panic(err)
		}
	})
}

func (h *harness) do(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://agor"+path, bytes.NewReader(b))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// raw sends one request with body and headers as given and returns the
// response unread.
func (h *harness) raw(t testing.TB, method, path string, body io.Reader, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, "http://agor"+path, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// restart stops the daemon and starts another on the same state,
// configuration (changed by tune) and socket.
func (h *harness) restart(t testing.TB, tune func(*daemon.Options)) *harness {
	t.Helper()
	h.stop()
	o := h.opts
	if tune != nil {
		tune(&o)
	}
	o.Log = h.opts.Log
	_ = os.Remove(h.sock)
	ln, err := net.Listen("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	o.Listener = ln
	d, err := daemon.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &harness{d: d, opts: o, logs: h.logs, sock: h.sock, work: h.work, state: h.state, cancel: cancel, done: make(chan error, 1), client: h.client}
	go func() { n.done <- d.Run(ctx) }()
	t.Cleanup(n.stop)
	return n
}

// post sends body as JSON and returns the status and the reply as text.
func (h *harness) post(t *testing.T, path string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post("http://agor"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// waitFor polls ok every 100 ms, for 30 s at most.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 300 {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// metrics is /v1/metrics as text.
func (h *harness) metrics(t testing.TB) string {
	t.Helper()
	resp, err := h.client.Get("http://agor/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// testIDs numbers the sessions and tasks tests store straight into the
// daemon's store (newTestID).
var testIDs struct {
	sync.Mutex
	n int
}

func newTestID() string {
	testIDs.Lock()
	defer testIDs.Unlock()
	testIDs.n++
	return fmt.Sprintf("load%028d", testIDs.n)
}

// write writes a file the test needs, failing the test if it cannot.
func write(t testing.TB, path, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}
