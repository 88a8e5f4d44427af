package sandbox

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// What Landlock does not govern, a seccomp filter the launcher installs
// refuses (EPERM unless said) in a confined process and all it starts:
//
//   - socket(AF_UNIX, ...): connect(2) to a Unix socket is no file write,
//     so a confined task could ask something outside to act for it (the
//     daemon's API, a tmux server, the user's D-Bus, an ssh-agent).
//     socketpair(2) stays for streams (it reaches no one); a datagram
//     pair is refused, as it could sendto(2) any socket by its address.
//   - chmod(2) and its kin adding other write bits, and group write bits
//     unless the person's umask grants them at creation anyway: Landlock
//     has no right for a mode change, and a world-writable ~/.bashrc is
//     another local user's way in. (Under the view nothing outside the
//     writable paths can change mode at all; this keeps a workspace's
//     files as private as the person's umask makes them.)
//   - setxattr(2) and removexattr(2) and their kin, with EOPNOTSUPP: an
//     ACL (system.posix_acl_access) opens a file to another user or group
//     whatever its mode, and a default ACL every file made beneath a
//     directory whatever the umask. The attribute's name is a pointer,
//     which a filter cannot read, so every name is refused; cp -a, tar,
//     rsync and Python's shutil take EOPNOTSUPP for "this filesystem has
//     none" and go on. Removing widens too: without its access ACL a
//     file's group bits are what the ACL's mask was, so group::r-- with
//     mask::rw- (any named entry with w) leaves the owning group rw.
//   - chown(2) and its kin giving a file to another group than her
//     primary one: a chgrp to a group she shares with others, whose group
//     bits then open it to them. The group -1 (left as it is) passes.
//     Inside the view her other groups are not mapped and the kernel
//     refuses them anyway (EINVAL); the filter holds without a view. A
//     chown to another user needs CAP_CHOWN, which she has not.
//   - umask(2) clearing a bit of refusedWriteBits: the launcher starts
//     the command with them in its umask, and such a call does not take
//     effect (umask.go), so nothing is made 0777 after umask(0).
//   - io_uring_setup(2): its operations bypass seccomp (IORING_OP_SOCKET).
//
// Filters are per thread: Main locks itself to the thread that installs
// one and execs from it, so the command inherits it.

// refusedWriteBits are the mode bits a confined chmod may not add: the
// others' write bit always, the group's unless umask leaves it to files
// made anyway (umask 002, Debian's for a person's own group, under which
// git init chmods its files g+w: refusing what creation grants protects
// nothing and breaks git).
func refusedWriteBits(umask int) uint32 {
	bits := uint32(0o002)
	if umask&0o020 != 0 {
		bits |= 0o020
	}
	return bits
}

// bpf assembles one classic BPF instruction.
func bpf(code uint16, jt, jf uint8, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	ret    = unix.BPF_RET | unix.BPF_K
	allow  = unix.SECCOMP_RET_ALLOW
	refuse = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	noAttr = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)

	offNr   = 0 // struct seccomp_data
	offArch = 4
)

// xattrCalls set or remove an extended attribute, ACLs among them
// (setxattrat and removexattrat: Linux 6.13, 463 and 466 on both
// architectures).
var xattrCalls = []uintptr{
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
}

// offArg is the offset of a system call argument's low 32 bits (little
// endian, as on every architecture this filter is built for).
func offArg(i int) uint32 { return 16 + 8*uint32(i) }

// rules are what the filter is built from, read as the launcher installs
// it.
type rules struct {
	unixSockets  bool   // AF_UNIX sockets allowed: the operator's exception
	refusedWrite uint32 // refusedWriteBits of the person's umask
	gid          uint32 // her primary group, the one a chown may name
	askInit      bool   // umask(2) clearing a refusedWrite bit: the init answers, else 0
}

// filter is the program: refuse a foreign architecture's calls (and x32's
// on x86_64), then the calls above (AF_UNIX sockets unless r.unixSockets;
// chmod adding a bit of r.refusedWrite; any extended attribute set or
// removed; chown to a group not r.gid; umask clearing r.refusedWrite).
func filter(r rules) []unix.SockFilter {
	p := []unix.SockFilter{
		bpf(ldAbs, 0, 0, offArch),
		bpf(jeq, 1, 0, auditArch),
		bpf(ret, 0, 0, refuse),
		bpf(ldAbs, 0, 0, offNr),
		bpf(jge, 0, 1, x32Bit), // x32's numbers (0 on architectures without it: never taken below)
		bpf(ret, 0, 0, refuse),
	}
	if !r.unixSockets {
		p = append(p, refuseArg(unix.SYS_SOCKET, 0, jeq, unix.AF_UNIX)...)
		p = append(p, refuseDgramPair()...)
	}
	for _, nr := range slices.Sorted(maps.Keys(chmodCalls)) {
		p = append(p, refuseArg(nr, chmodCalls[nr], jset, r.refusedWrite)...)
	}
	for _, nr := range slices.Sorted(maps.Keys(chownCalls)) {
		p = append(p, refuseGroup(nr, chownCalls[nr], r.gid)...)
	}
	for _, nr := range xattrCalls {
		p = append(p, bpf(jeq, 0, 1, uint32(nr)), bpf(ret, 0, 0, noAttr))
	}
	umask := uint32(skipUmask)
	if r.askInit {
		umask = unix.SECCOMP_RET_USER_NOTIF
	}
	p = append(p, keepUmask(r.refusedWrite, umask)...)
	p = append(p,
		bpf(jeq, 0, 1, unix.SYS_IO_URING_SETUP),
		bpf(ret, 0, 0, refuse),
		bpf(ret, 0, 0, allow),
	)
	return p
}

// refuseArg refuses system call nr when its argument arg, tested with
// test (jeq: equals k; jset: has a bit of k), matches. The accumulator
// holds the call's number before and after.
func refuseArg(nr uintptr, arg int, test uint16, k uint32) []unix.SockFilter {
	return []unix.SockFilter{
		bpf(jeq, 0, 4, uint32(nr)),
		bpf(ldAbs, 0, 0, offArg(arg)),
		bpf(test, 0, 1, k),
		bpf(ret, 0, 0, refuse),
		bpf(ldAbs, 0, 0, offNr),
	}
}

// refuseGroup refuses chown call nr unless its group argument arg is -1
// or gid. gid_t is 32 bits and the kernel reads no more of the register:
// the low 32 bits compared are what the call would use.
func refuseGroup(nr uintptr, arg int, gid uint32) []unix.SockFilter {
	return []unix.SockFilter{
		bpf(jeq, 0, 5, uint32(nr)),
		bpf(ldAbs, 0, 0, offArg(arg)),
		bpf(jeq, 2, 0, 0xffffffff),
		bpf(jeq, 1, 0, gid),
		bpf(ret, 0, 0, refuse),
		bpf(ldAbs, 0, 0, offNr),
	}
}

// keepUmask gives a umask(2) call whose new mask lacks a bit of refused
// the action.
func keepUmask(refused, action uint32) []unix.SockFilter {
	return []unix.SockFilter{
		bpf(jeq, 0, 5, unix.SYS_UMASK),
		bpf(ldAbs, 0, 0, offArg(0)),
		bpf(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0, 0, refused),
		bpf(jeq, 1, 0, refused),
		bpf(ret, 0, 0, action),
		bpf(ldAbs, 0, 0, offNr),
	}
}

// refuseDgramPair refuses socketpair(AF_UNIX, SOCK_DGRAM, ...): such a
// socket may still sendto(2) any pathname or abstract socket by address,
// which is a way to reach what socket(AF_UNIX) is refused for. Stream
// and seqpacket pairs stay (libuv gives children their stdio over them);
// their sends ignore an address. The type's flags (SOCK_CLOEXEC,
// SOCK_NONBLOCK) are masked off.
func refuseDgramPair() []unix.SockFilter {
	return []unix.SockFilter{
		bpf(jeq, 0, 6, unix.SYS_SOCKETPAIR),
		bpf(ldAbs, 0, 0, offArg(0)),
		bpf(jeq, 0, 4, unix.AF_UNIX),
		bpf(ldAbs, 0, 0, offArg(1)),
		bpf(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0, 0, 0xf),
		bpf(jeq, 0, 1, unix.SOCK_DGRAM),
		bpf(ret, 0, 0, refuse),
		bpf(ldAbs, 0, 0, offNr),
	}
}
