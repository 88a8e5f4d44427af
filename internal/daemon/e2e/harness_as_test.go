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
// AGOR_TEST_HTTP_AS is set) and makes one request.

// httpAs is the child of TestUnknownCallerRefused: "SOCK METHOD PATH" →
// one request on the API socket; prints the status and the body.
func httpAs(req string) int {
	f := strings.SplitN(req, " ", 3)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", f[0])
	}}}
	r, _ := http.NewRequest(f[1], "http://agor"+f[2], strings.NewReader("{}"))
	resp, err := c.Do(r)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, b)
	return 0
}

// requestAs makes one API request from a real process running as uid (its
// gid the same), known to the daemon by SO_PEERCRED; it returns "STATUS
// BODY".
func (h *harness) requestAs(t *testing.T, uid uint32, route string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(h.sock), "client")
	if _, err := os.Stat(bin); err != nil { // a copy other uids may run (go test keeps its own private)
		self, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(bin, self, 0o755) != nil || os.Chmod(h.sock, 0o666) != nil {
			t.Fatalf("preparing a client for uid %d: %v", uid, err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGOR_TEST_HTTP_AS="+h.sock+" "+route)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s as uid %d: %v %s", route, uid, err, got)
	}
	return string(got)
}
