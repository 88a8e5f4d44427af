package executorunit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The direct backend has no cgroup of its own per executor, so it counts
// the executor's process tree from /proc.

// Unavailable from /proc: what only a cgroup counts.
var procUnavailable = []string{
	"io_read: the direct backend has no per-executor cgroup to count IO",
	"io_write: the direct backend has no per-executor cgroup to count IO",
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux architecture Go supports.
const userHZ = 100

// Usage sums each running executor's process tree from /proc: CPU as
// utime+stime plus the reaped children's cutime+cstime, memory as the sum
// of resident sets (shared pages counted once per process, so an upper
// bound), tasks as threads.
func (d *Direct) Usage(_ context.Context, users []string) (map[string]Usage, error) {
	d.mu.Lock()
	roots := map[int]string{}
	for _, name := range users {
		if e := d.execs[name]; e != nil && e.running() {
			roots[e.cmd.Process.Pid] = name
		}
	}
	d.mu.Unlock()
	procs := readProcs("/proc")
	out := make(map[string]Usage, len(roots))
	for pid, name := range roots {
		out[name] = treeUsage(procs, pid)
	}
	return out, nil
}

// procStat is what Usage needs of one /proc/PID/stat.
type procStat struct {
	ppid             int
	ticks            uint64 // utime+stime+cutime+cstime
	threads, rssPage uint64
}

func readProcs(root string) map[int]procStat {
	ents, _ := os.ReadDir(root)
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue // gone, or hidden from us
		}
		if st, ok := parseStat(b); ok {
			out[pid] = st
		}
	}
	return out
}

// parseStat reads proc(5)'s stat line: after "(comm)", fields 4.. are
// ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... num_threads(20)
// ... rss(24).
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 22 {
		return procStat{}, false
	}
	n := func(field int) uint64 {
		v, _ := strconv.ParseInt(f[field-3], 10, 64)
		return uint64(max(v, 0))
	}
	return procStat{
		ppid:    int(n(4)),
		ticks:   n(14) + n(15) + n(16) + n(17),
		threads: n(20),
		rssPage: n(24),
	}, true
}

func treeUsage(procs map[int]procStat, root int) Usage {
	children := map[int][]int{}
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var ticks, threads, pages uint64
	for todo := []int{root}; len(todo) > 0; {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		st, ok := procs[pid]
		if !ok {
			continue
		}
		ticks, threads, pages = ticks+st.ticks, threads+st.threads, pages+st.rssPage
		todo = append(todo, children[pid]...)
	}
	cpu := ticks * (1_000_000_000 / userHZ)
	mem := pages * uint64(os.Getpagesize())
	return Usage{CPUNSec: &cpu, MemoryBytes: &mem, Tasks: &threads, Source: "proc", Unavailable: procUnavailable}
}
