package peer

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// TCPSocket is the client end of a TCP connection made on this host, as
// the kernel's socket table lists it: the account that made it and its
// inode (0 once no process holds it: closed, or an orphan).
type TCPSocket struct {
	UID   uint32
	Inode uint64
}

// TCPClient finds the socket at the client end of a connection this
// process accepted: client is the connection's remote address, server
// its local one. A connection from another host has no such socket here
// (found false). A TCP connection carries no SO_PEERCRED; the kernel's
// socket diagnostics (sock_diag, one lookup by the four addresses) say
// who made a local one, else its socket table (/proc/net/tcp, read
// whole: where netlink is refused, or the lookup finds none, as for a
// socket of IPv6 family with IPv4-mapped addresses).
func TCPClient(client, server netip.AddrPort) (s TCPSocket, found bool, err error) {
	if s, found, err := diagTCP(client, server); found || (err != nil && !errors.Is(err, errNoDiag)) {
		return s, found, err
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if os.IsNotExist(err) {
			continue // no IPv6 on this kernel
		}
		if err != nil {
			return TCPSocket{}, false, fmt.Errorf("the kernel's socket table: %w", err)
		}
		s, found, err = findTCP(f, client, server)
		f.Close()
		if err != nil || found {
			return s, found, err
		}
	}
	return TCPSocket{}, false, nil
}

// findTCP reads a /proc/net/tcp table for the socket whose local address
// is client and remote address is server. An established socket, which
// has an inode while it is held, wins over a closed one of the same pair.
func findTCP(r io.Reader, client, server netip.AddrPort) (s TCPSocket, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		local, err1 := parseHexAddr(f[1])
		remote, err2 := parseHexAddr(f[2])
		if err1 != nil || err2 != nil {
			return TCPSocket{}, false, fmt.Errorf("the kernel's socket table: unreadable line %q", sc.Text())
		}
		if local != unmap(client) || remote != unmap(server) {
			continue
		}
		uid, err1 := strconv.ParseUint(f[7], 10, 32)
		inode, err2 := strconv.ParseUint(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			return TCPSocket{}, false, fmt.Errorf("the kernel's socket table: unreadable line %q", sc.Text())
		}
		if !found || inode != 0 {
			s, found = TCPSocket{UID: uint32(uid), Inode: inode}, true
		}
	}
	return s, found, sc.Err()
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// parseHexAddr reads the table's "ADDR:PORT": the address as 32-bit words
// in the host's byte order (little-endian on every architecture we ship),
// the port big-endian hex.
func parseHexAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("no port in %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", a)
	}
	for i := 0; i < len(b); i += 4 { // each word from little-endian
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
