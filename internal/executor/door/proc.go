package door

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// proc is a process as /proc names it: its pid and its start time (in
// clock ticks since boot), which a pid used again does not share.
type proc struct {
	pid   int
	start uint64
}

// maxTree bounds the processes one walk visits: a task's tree is a few
// (a CLI, its shells and tools); a fork bomb's is not looked through.
const maxTree = 4096

// procOf reads pid's start time; false when there is no such process.
func procOf(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ... starttime is the 22nd field; comm may
	// hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	return proc{pid: pid, start: start}, err == nil
}

func socketLink(inode uint64) string { return "socket:[" + strconv.FormatUint(inode, 10) + "]" }

// treeHolds reports whether root (still the same process) or anything it
// started, and not reparented away, holds a descriptor open on link. It
// goes down through /proc/PID/task/TID/children, so that only the task's
// own processes are read; without that file (a kernel without
// CONFIG_PROC_CHILDREN) it takes parents from every /proc/PID/stat.
func treeHolds(root proc, link string) bool {
	if p, ok := procOf(root.pid); !ok || p.start != root.start {
		return false
	}
	children := childrenOf
	if _, err := os.Stat("/proc/" + strconv.Itoa(root.pid) + "/task/" + strconv.Itoa(root.pid) + "/children"); err != nil {
		children = parentTable().children
	}
	queue := []int{root.pid}
	for seen := 0; len(queue) > 0 && seen < maxTree; seen++ {
		pid := queue[0]
		queue = queue[1:]
		if holds(pid, link) {
			return true
		}
		queue = append(queue, children(pid)...)
	}
	return false
}

// childrenOf lists pid's children, from each of its threads' list.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + tid.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// parents maps each visible process to its parent.
type parents map[int]int

func parentTable() parents {
	out := parents{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := bytes.Fields(b[i+1:]); len(f) > 1 {
				out[pid], _ = strconv.Atoi(string(f[1]))
			}
		}
	}
	return out
}

func (p parents) children(pid int) []int {
	var out []int
	for c, parent := range p {
		if parent == pid {
			out = append(out, c)
		}
	}
	return out
}

// holds reports whether pid has a descriptor open on link. Another
// account's processes, or one that made itself undumpable, cannot be
// read: they hold nothing as far as the door knows (it fails closed).
func holds(pid int, link string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && l == link {
			return true
		}
	}
	return false
}
