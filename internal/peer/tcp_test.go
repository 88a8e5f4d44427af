package peer

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTCPClient makes a loopback connection and finds its client end in
// the kernel's table: this process's uid and the client socket's inode.
func TestTCPClient(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer ln.Close()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			srv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s, found, err := TCPClient(addrPort(t, srv.RemoteAddr()), addrPort(t, srv.LocalAddr()))
			if err != nil || !found {
				t.Fatalf("TCPClient: found %v, %v", found, err)
			}
			if want := inodeOf(t, c); s.UID != uint32(os.Getuid()) || s.Inode != want {
				t.Errorf("got uid %d inode %d, want uid %d inode %d", s.UID, s.Inode, os.Getuid(), want)
			}
			// The server's own end is not the client's.
			if s2, found, _ := TCPClient(addrPort(t, srv.LocalAddr()), addrPort(t, srv.RemoteAddr())); found && s2.Inode == s.Inode {
				t.Errorf("the reversed pair found the client's socket")
			}
		})
	}
}

func TestTCPClientNotLocal(t *testing.T) {
	_, found, err := TCPClient(netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("192.0.2.1:8123"))
	if err != nil || found {
		t.Errorf("a pair no socket here has: found %v, %v", found, err)
	}
}

func TestFindTCPTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1FBB 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 1111 1 0 100 0 0 10 0
   1: 0100007F:9C40 0100007F:1FBB 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0
   2: 0100007F:9C40 0100007F:1FBB 01 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0 20 4 30 10 -1
`
	s, found, err := findTCP(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("127.0.0.1:8123"))
	if err != nil || !found || s != (TCPSocket{UID: 1001, Inode: 4242}) {
		t.Errorf("got %+v found %v err %v, want uid 1001 inode 4242 (the held socket over the closed one)", s, found, err)
	}
	if _, _, err := findTCP(strings.NewReader("h\n 0: zz:1 0100007F:1FBB 01 0 0 0 1 0 1\n"), netip.AddrPort{}, netip.AddrPort{}); err == nil {
		t.Error("an unreadable line was taken")
	}
}

func addrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func inodeOf(t *testing.T, c net.Conn) uint64 {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := raw.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// The kernel's diagnostics and its table say the same of a socket, for
// each family; the diagnostics find it among thousands by one lookup
// (both timed, printed).
func TestDiagAgreesWithTable(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("no %s loopback: %v", network, err)
			continue
		}
		defer ln.Close()
		var conns []net.Conn
		for range 500 { // a busy host's table
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		c := conns[len(conns)-1]
		client, server := addrPort(t, c.LocalAddr()), addrPort(t, c.RemoteAddr())
		t0 := time.Now()
		d, found, err := diagTCP(client, server)
		diag := time.Since(t0)
		if errors.Is(err, errNoDiag) {
			t.Skipf("no sock_diag here: %v", err)
		}
		if err != nil || !found {
			t.Fatalf("%s: diag found %v, %v", network, found, err)
		}
		t0 = time.Now()
		var tab TCPSocket
		for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			f, err := os.Open(file)
			if err != nil {
				continue
			}
			s, ok, _ := findTCP(f, client, server)
			f.Close()
			if ok {
				tab = s
				break
			}
		}
		table := time.Since(t0)
		if d != tab || d.Inode != inodeOf(t, c) || d.UID != uint32(os.Getuid()) {
			t.Fatalf("%s: diag %+v, table %+v, inode %d", network, d, tab, inodeOf(t, c))
		}
		if _, found, err := diagTCP(netip.MustParseAddrPort("127.0.0.1:1"), server); found || err != nil {
			t.Errorf("%s: a socket nobody has: found %v, %v", network, found, err)
		}
		t.Logf("%s, beside %d connections: sock_diag %v, the table read whole %v", network, len(conns), diag, table)
	}
}
