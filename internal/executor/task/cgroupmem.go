package task

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// prewarmHeadroom is the memory a pre-warm needs below the executor's
// cgroup limit: the largest idle pre-warmed CLI measured (opencode, about
// 375 MiB resident; make bench, BenchmarkFirstPrompt) and room for its
// first turn. A person working near her MemoryMax gets no pre-warm: an
// agent started on a guess could make the kernel's OOM killer end work
// she is waiting for.
const prewarmHeadroom = 512 << 20

// cgroupRoom is how far the executor's cgroup, or the nearest ancestor
// that limits it, is below its memory limit (memory.max, or memory.high
// when lower): the least room over the ancestors. -1: no limit, or not
// known (no cgroup v2 here).
func cgroupRoom() int64 { return roomUnder("/sys/fs/cgroup", "/proc/self/cgroup") }

func roomUnder(sysfs, selfCgroup string) int64 {
	rel, ok := cgroupPath(selfCgroup)
	if !ok {
		return -1
	}
	room := int64(-1)
	for dir := filepath.Join(sysfs, rel); strings.HasPrefix(dir, sysfs) && dir != sysfs; dir = filepath.Dir(dir) {
		limit := min(limitIn(dir, "memory.max"), limitIn(dir, "memory.high"))
		if limit == noLimit {
			continue
		}
		used, err := readInt(filepath.Join(dir, "memory.current"))
		if err != nil {
			continue
		}
		if r := max(limit-used, 0); room < 0 || r < room {
			room = r
		}
	}
	return room
}

// cgroupPath is the cgroup v2 path in /proc/self/cgroup ("0::/path").
func cgroupPath(selfCgroup string) (string, bool) {
	f, err := os.Open(selfCgroup)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("0::")); ok {
			return filepath.Clean("/" + string(rest)), true
		}
	}
	return "", false
}

// noLimit stands for "max" or no file, so that min picks the other.
const noLimit = math.MaxInt64

// limitIn is the byte limit in a memory.max or memory.high file.
func limitIn(dir, file string) int64 {
	v, err := readInt(filepath.Join(dir, file))
	if err != nil {
		return noLimit
	}
	return v
}

func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
}
