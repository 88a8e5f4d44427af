package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

var binary string

func TestMain(m *testing.M) { exectest.Main(m, &binary) }

func target(t *testing.T) (string, int) { return exectest.Target(t) }

// daemon serves the API over a Unix socket with the direct backend.
func daemon(t *testing.T) *http.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-apid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755) // the executor may run as another account
	work := filepath.Join(dir, "work")
	_ = os.Mkdir(work, 0o755)
	_ = os.Chmod(work, 0o777) // the executor may run as the tests' account, which has no home
	backend := &executorunit.Direct{Policy: executorunit.Policy{MinUID: 1, SocketTemplate: filepath.Join(dir, "x", "{user}.sock")}, Binary: binary, Root: work}
	p := &pool.Pool{Backend: backend, Timeout: 10 * time.Second}
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	out := &Outputs{}
	p.Handler = func(string) rpc.Handler { return out.Handler(nil) }
	srv := NewHTTPServer((&Server{Pool: p, Backend: backend, Outputs: out}).Handler())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done; p.Close(); backend.Close() })
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

func do(t *testing.T, c *http.Client, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://agor"+path, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, path, b, err)
	}
	return resp.StatusCode, out
}

func reason(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	r, _ := e["reason"].(string)
	return r
}

func TestEnsureOnFirstUseAndRefusals(t *testing.T) {
	c := daemon(t)
	name, uid := target(t)
	code, out := do(t, c, "PUT", "/v1/executors/"+name, "")
	ping, _ := out["ping"].(map[string]any)
	if code != 200 || ping["uid"] != float64(uid) {
		t.Fatalf("PUT own executor: %d %v", code, out)
	}
	for _, tc := range []struct {
		user   string
		status int
		reason string
	}{
		{"root", 503, "user_not_allowed"},
		{"no-such-user", 503, "no_such_user"},
		{"Bad_Name", 503, "no_such_user"}, // a name systemd accepts, but no account
		{"1000", 400, "invalid_params"},
	} {
		if os.Geteuid() != 0 && tc.status != 400 {
			continue // a non-root caller is refused before the backend is asked
		}
		code, out := do(t, c, "PUT", "/v1/executors/"+tc.user, "")
		if code != tc.status || reason(out) != tc.reason {
			t.Errorf("PUT %s: %d %v, want %d %s", tc.user, code, out, tc.status, tc.reason)
		}
	}
	code, out = do(t, c, "GET", "/v1/health", "")
	if code != 200 || out["status"] != "ok" {
		t.Fatalf("health: %d %v", code, out)
	}
}

// kill -9 of the executor under a long request: the request fails as
// "executor crashed" within a second, and the next use starts a new one.
func TestExecutorCrashFailsInFlight(t *testing.T) {
	c := daemon(t)
	name, _ := target(t)
	_, out := do(t, c, "PUT", "/v1/executors/"+name, "")
	pid := int(out["ping"].(map[string]any)["pid"].(float64))

	type result struct {
		code int
		out  map[string]any
		at   time.Time
	}
	res := make(chan result, 1)
	go func() {
		code, out := do(t, c, "POST", "/v1/executors/"+name+"/exec", `{"argv":["sleep","30"]}`)
		res <- result{code, out, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.code != 503 || reason(r.out) != "executor_crashed" {
			t.Fatalf("in-flight exec after kill -9: %d %v", r.code, r.out)
		}
		t.Logf("in-flight request failed %s after kill -9", r.at.Sub(killed).Round(time.Millisecond))
		if r.at.Sub(killed) > time.Second {
			t.Errorf("took %s, want within 1s", r.at.Sub(killed))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not fail after kill -9")
	}
	code, out := do(t, c, "PUT", "/v1/executors/"+name, "")
	if code != 200 {
		t.Fatalf("the next use did not start a new executor: %d %v", code, out)
	}
	if newPid := int(out["ping"].(map[string]any)["pid"].(float64)); newPid == pid {
		t.Fatalf("same pid %d after the executor was killed", pid)
	}
}
