package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// errNoDiag: the kernel's socket diagnostics are not to be had here (a
// unit without AF_NETLINK, an old kernel): the table is read instead.
var errNoDiag = errors.New("no sock_diag")

// Sizes and offsets of the kernel's structures (linux/inet_diag.h).
const (
	sizeofNlmsghdr    = 16
	sizeofInetDiagReq = 56 // inet_diag_req_v2
	sizeofInetDiagMsg = 72
	offUID, offInode  = 64, 68 // in inet_diag_msg
)

// diagTCP asks the kernel (NETLINK_SOCK_DIAG) for the one TCP socket whose
// local end is local and remote end is remote: a lookup by its four
// addresses, however many sockets the host has, where reading
// /proc/net/tcp is a walk of them all. found is false when there is none.
func diagTCP(local, remote netip.AddrPort) (s TCPSocket, found bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return TCPSocket{}, false, fmt.Errorf("%w: %v", errNoDiag, err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Sendto(fd, diagRequest(local, remote), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return TCPSocket{}, false, fmt.Errorf("%w: %v", errNoDiag, err)
	}
	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return TCPSocket{}, false, fmt.Errorf("sock_diag: %w", err)
	}
	return diagAnswer(buf[:n])
}

// diagRequest is one SOCK_DIAG_BY_FAMILY request for the socket, in any
// state, without NLM_F_DUMP: the kernel looks that one up.
func diagRequest(local, remote netip.AddrPort) []byte {
	b := make([]byte, sizeofNlmsghdr+sizeofInetDiagReq)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	r := b[sizeofNlmsghdr:]
	r[0], r[1] = unix.AF_INET, unix.IPPROTO_TCP
	if !local.Addr().Unmap().Is4() {
		r[0] = unix.AF_INET6
	}
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putAddr(id[4:20], local.Addr())
	putAddr(id[20:36], remote.Addr())
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// putAddr writes a as the kernel's __be32[4]: IPv4 in the first word.
func putAddr(dst []byte, a netip.Addr) {
	if a = a.Unmap(); a.Is4() {
		v := a.As4()
		copy(dst, v[:])
		return
	}
	v := a.As16()
	copy(dst, v[:])
}

// diagAnswer reads the kernel's answer: one inet_diag_msg, or an error
// message (ENOENT: no such socket).
func diagAnswer(b []byte) (TCPSocket, bool, error) {
	ne := binary.NativeEndian
	if len(b) < sizeofNlmsghdr {
		return TCPSocket{}, false, errors.New("sock_diag: short answer")
	}
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(b) < sizeofNlmsghdr+4 {
			return TCPSocket{}, false, errors.New("sock_diag: short error")
		}
		errno := unix.Errno(-int32(ne.Uint32(b[sizeofNlmsghdr:])))
		if errno == unix.ENOENT {
			return TCPSocket{}, false, nil
		}
		return TCPSocket{}, false, fmt.Errorf("%w: %v", errNoDiag, errno)
	case unix.SOCK_DIAG_BY_FAMILY:
		m := b[sizeofNlmsghdr:]
		if len(m) < sizeofInetDiagMsg {
			return TCPSocket{}, false, errors.New("sock_diag: short message")
		}
		return TCPSocket{UID: ne.Uint32(m[offUID:]), Inode: uint64(ne.Uint32(m[offInode:]))}, true, nil
	}
	return TCPSocket{}, false, fmt.Errorf("sock_diag: answer of type %d", ne.Uint16(b[4:]))
}
