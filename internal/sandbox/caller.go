package sandbox

import (
	"os"
	"strconv"
	"strings"
)

// Confined reports whether process pid runs inside a sandbox the
// executor executorPID started: it descends from the executor and has
// more seccomp filters than it (the launcher's filter is one more than
// the executor's own, its unit's; nothing removes a filter). The daemon
// asks this of a caller on its API socket: a confined task that reaches
// it (sandbox.unix_sockets on) must not get unconfined work done for it.
func Confined(pid, executorPID int) bool {
	if pid <= 0 || executorPID <= 0 || pid == executorPID {
		return false
	}
	base, ok := seccompFilters(executorPID)
	if !ok {
		return false
	}
	n, ok := seccompFilters(pid)
	if !ok || n <= base {
		return false
	}
	for p, hops := parentOf(pid), 0; p > 1 && hops < 4096; p, hops = parentOf(p), hops+1 {
		if p == executorPID {
			return true
		}
	}
	return false
}

// seccompFilters is /proc/PID/status's Seccomp_filters.
func seccompFilters(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp_filters:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// parentOf is pid's parent, 0 when unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// SocketHolders finds the processes this one can see that hold the
// socket with inode (a client's end of a TCP connection to the daemon):
// how many, and whether any of them is confined by executorPID's
// launcher. A TCP connection carries no peer credentials; the daemon
// finds the socket's owner and inode in the kernel's table and asks that
// person's executor, which may read its own processes' descriptors.
func SocketHolders(inode uint64, executorPID int) (holders int, confined bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil || inode == 0 {
		return 0, false
	}
	link := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || !holds(pid, link) {
			continue
		}
		holders++
		if Confined(pid, executorPID) {
			confined = true
		}
	}
	return holders, confined
}

// holds reports whether pid has a descriptor open on link (a socket's
// "socket:[INODE]").
func holds(pid int, link string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false // another user's, or gone
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && l == link {
			return true
		}
	}
	return false
}
