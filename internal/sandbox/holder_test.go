package sandbox

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/peer"
)

// TestSocketHolders: the client end of a TCP connection to a listener
// here is found in the process that made it, confined or not; a
// confined one that orphaned itself (its parent gone: the view's init
// adopts it) is still confined.
func TestSocketHolders(t *testing.T) {
	needLandlock(t)
	r := newViewRig(t)
	landlockOnly := r.spec()
	landlockOnly.Namespaces, landlockOnly.self = false, os.Args[0]
	view := r.spec()
	view.self = os.Args[0]
	cases := []struct {
		name     string
		argv     func(script string) []string
		confined bool
		view     bool
	}{
		{"plain", func(s string) []string { return []string{"bash", "-c", s} }, false, false},
		{"landlock", func(s string) []string { return landlockOnly.Command([]string{"bash", "-c", s}) }, true, false},
		{"view orphan", func(s string) []string {
			return view.Command([]string{"bash", "-c", "( (" + s + ") & ); sleep 30"})
		}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.view {
				needNamespaces(t)
			}
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			argv := c.argv("exec 3<>/dev/tcp/127.0.0.1/" + port + "; sleep 30")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = r.work
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
			srv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s, found, err := peer.TCPClient(netip.MustParseAddrPort(srv.RemoteAddr().String()), netip.MustParseAddrPort(srv.LocalAddr().String()))
			if err != nil || !found {
				t.Fatalf("the client's socket: found %v, %v", found, err)
			}
			n, confined := SocketHolders(s.Inode, os.Getpid())
			if n != 1 || confined != c.confined {
				t.Errorf("%d holders, confined %v; want 1, %v", n, confined, c.confined)
			}
		})
	}
	if n, confined := SocketHolders(0, os.Getpid()); n != 0 || confined {
		t.Errorf("inode 0 (a socket no process holds): %d holders", n)
	}
}
