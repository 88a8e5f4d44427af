package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A confined task makes nothing more open than the person's umask lets
// it: after umask(0), mkdir would give 0777 and a file 0666, and no chmod
// is asked. The launcher starts the command with refusedWriteBits in its
// umask, and a umask(2) call that would clear one of them does not take
// effect: the filter answers it in the kernel's place.
//
// What it answers matters, since programs read their umask by setting
// it (old = umask(0); umask(old): node's process.umask(), pip, dash's
// umask builtin), and compute modes from it. In the view the
// namespace's init answers (SECCOMP_RET_USER_NOTIF) with the caller's
// real umask, read in /proc. Where no init can (the plain launcher
// execs the command; a unit refusing seccomp(2); a listener already in
// the chain) the filter answers 0 itself: SECCOMP_RET_ERRNO with errno
// 0 skips the call and returns 0. npm then computes 0777 for its bins,
// whose chmod the filter refuses, so `npm install` of a package with a
// bin fails there. Never an error: libc hands -1 back as the mask
// 0xffffffff, and a later umask(old) would set 0777, after which every
// file is made with no permission at all.
const skipUmask = unix.SECCOMP_RET_ERRNO // | errno 0

// installFilter installs the filter on this thread (which must stay
// locked to the calling goroutine until it execs or forks the command),
// after adding refusedWriteBits to the umask. no_new_privs is set
// first, as an unprivileged filter needs it. With supervise (the
// namespace's init, which outlives the command) this process answers
// the command's umask calls; otherwise the filter does.
func installFilter(unixSockets, supervise bool) error {
	if auditArch == 0 {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	umask := unix.Umask(0)
	r := rules{unixSockets: unixSockets, refusedWrite: refusedWriteBits(umask), gid: uint32(os.Getgid())}
	unix.Umask(umask | int(r.refusedWrite))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if supervise {
		r.askInit = true
		if listener, err := loadWithListener(filter(r)); err == nil {
			go answerUmask(listener)
			return nil
		}
		r.askInit = false
	}
	prog := filter(r)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// loadWithListener installs prog with seccomp(2) and returns the
// listener its USER_NOTIF calls go to. The kernel makes it inheritable:
// it is made close-on-exec at once, under the fork lock, or the command
// could answer its own calls.
func loadWithListener(prog []unix.SockFilter) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return -1, e
	}
	unix.CloseOnExec(int(fd))
	return int(fd), nil
}

// seccompNotif and seccompNotifResp are the kernel's struct
// seccomp_notif and struct seccomp_notif_resp (linux/seccomp.h).
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// answerUmask answers each umask call the filter sends to listener with
// the caller's umask (0 when it cannot be read), which the call leaves
// as it was. It runs as long as this process, the namespace's init, whose
// end ends every caller: nothing waits for it.
func answerUmask(listener int) {
	for {
		var n seccompNotif // the kernel wants it zeroed
		err := notifIoctl(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n))
		if err == unix.EINTR || err == unix.ENOENT { // the caller died first
			continue
		}
		if err != nil {
			return
		}
		mask, _ := umaskOf(int(n.pid))
		// The caller may have died, and its number gone to another,
		// while its status was read: answer only a call still waiting.
		if notifIoctl(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.id)) != nil {
			continue
		}
		resp := seccompNotifResp{id: n.id, val: int64(mask)}
		_ = notifIoctl(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

func notifIoctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// umaskOf is the umask of thread tid (a number in this PID namespace),
// from its status in /proc.
func umaskOf(tid int) (uint32, error) {
	p, err := procNumber(tid)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return uint32(m) & 0o777, err
		}
	}
	return 0, fmt.Errorf("no umask in /proc/%d/status", p)
}

// procNumber is the number /proc knows thread tid by. /proc is this PID
// namespace's where the view could mount one (then this process, its
// init, is 1 there). Otherwise it is the unit's (a unit whose /proc has
// locked mounts, ProtectKernelLogs=), where a pidfd's fdinfo gives the
// thread's number: any thread's from Linux 6.9 (PIDFD_THREAD), a
// process's main thread's before.
func procNumber(tid int) (int, error) {
	if self, _ := os.Readlink("/proc/self"); self == "1" {
		return tid, nil
	}
	fd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		fd, err = unix.PidfdOpen(tid, 0)
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("thread %d: not in this /proc", tid)
}
