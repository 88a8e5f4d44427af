package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenPorts is the loopback TCP ports (IPv4) the agent or anything it
// started listens on: the processes carrying its run's tag, whose
// sockets are found in the kernel's table (/proc/net/tcp) by inode.
func (p *Proc) ListenPorts() []int {
	inodes := map[string]bool{}
	for _, pid := range append(tagged([]byte(p.tag+"\x00")), p.Pid()) {
		fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid()), "net", "tcp"))
	if err != nil {
		return nil
	}
	var ports []int
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st ... inode: 0A is LISTEN,
		// 0100007F 127.0.0.1 in the kernel's byte order.
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		addr, port, _ := strings.Cut(f[1], ":")
		if n, err := strconv.ParseUint(port, 16, 16); err == nil && addr == "0100007F" {
			ports = append(ports, int(n))
		}
	}
	return ports
}
