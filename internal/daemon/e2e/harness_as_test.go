package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Requests from a real process of another uid, known to the daemon by
// SO_PEERCRED: the test binary runs again as that uid (TestMain, when
// AGOR_TEST_HTTP_AS is set) and makes the requests, each on a connection
// of its own.

// httpAs is the child of requestsAs: "SOCK ROUTE[\nROUTE...]", each ROUTE
// "METHOD PATH" → one request per ROUTE on a new connection to the API
// socket; prints each "STATUS BODY" and a NUL after it.
func httpAs(req string) int {
	sock, routes, _ := strings.Cut(req, " ")
	for _, route := range strings.Split(routes, "\n") {
		method, path, _ := strings.Cut(route, " ")
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		r, _ := http.NewRequest(method, "http://agor"+path, strings.NewReader("{}"))
		resp, err := c.Do(r)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s\x00", resp.StatusCode, b)
	}
	return 0
}

// requestAs makes one API request from a real process running as uid (its
// gid the same), known to the daemon by SO_PEERCRED; it returns "STATUS
// BODY".
func (h *harness) requestAs(t *testing.T, uid uint32, route string) string {
	t.Helper()
	return h.requestsAs(t, uid, []string{route})[0]
}

// requestsAs is requestAs for each of routes, from one process (a start
// of this race-instrumented binary costs about a second): each request
// on a connection of its own, so that each is judged by its own
// SO_PEERCRED.
func (h *harness) requestsAs(t *testing.T, uid uint32, routes []string) []string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(h.sock), "client")
	if _, err := os.Stat(bin); err != nil { // a copy other uids may run (go test keeps its own private)
		self, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(bin, self, 0o755) != nil || os.Chmod(h.sock, 0o666) != nil {
			t.Fatalf("preparing a client for uid %d: %v", uid, err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGOR_TEST_HTTP_AS="+h.sock+" "+strings.Join(routes, "\n"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s as uid %d: %v %s", routes, uid, err, got)
	}
	out := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00")
	if len(out) != len(routes) {
		t.Fatalf("%d routes as uid %d: %d answers: %q", len(routes), uid, len(out), got)
	}
	return out
}
