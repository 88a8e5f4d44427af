package task

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// cgroupTree writes a cgroup v2 tree under a temporary sysfs: each
// directory (relative) with its files, and /proc/self/cgroup naming leaf.
func cgroupTree(t *testing.T, leaf string, dirs map[string]map[string]string) (sysfs, self string) {
	t.Helper()
	root := t.TempDir()
	sysfs = filepath.Join(root, "cgroup")
	for dir, files := range dirs {
		d := filepath.Join(sysfs, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	self = filepath.Join(root, "self-cgroup")
	if err := os.WriteFile(self, []byte("0::/"+leaf+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sysfs, self
}

// TestRoomUnder: the least room below a limit over the executor's cgroup
// and its ancestors, memory.high counting when lower than memory.max;
// -1 with no limit anywhere or no cgroup v2 line.
func TestRoomUnder(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		dirs map[string]map[string]string
		want int64
	}{
		{"the unit's MemoryMax, the executor in a leaf below it", map[string]map[string]string{
			"s/u.service":      {"memory.max": "1073741824", "memory.high": "max", "memory.current": "838860800"},
			"s/u.service/exec": {"memory.max": "max", "memory.current": "104857600"},
		}, 1024*mib - 800*mib},
		{"memory.high lower than memory.max", map[string]map[string]string{
			"s/u.service":      {"memory.max": "2147483648", "memory.high": "1073741824", "memory.current": "536870912"},
			"s/u.service/exec": {"memory.current": "1"},
		}, 512 * mib},
		{"the slice tighter than the unit", map[string]map[string]string{
			"s":                {"memory.max": "1073741824", "memory.current": "1040187392"},
			"s/u.service":      {"memory.max": "2147483648", "memory.current": "10485760"},
			"s/u.service/exec": {"memory.current": "1"},
		}, 32 * mib},
		{"over the limit", map[string]map[string]string{
			"s/u.service/exec": {"memory.max": "100", "memory.current": "200"},
		}, 0},
		{"no limit", map[string]map[string]string{
			"s/u.service/exec": {"memory.max": "max", "memory.current": "200"},
		}, -1},
	} {
		sysfs, self := cgroupTree(t, "s/u.service/exec", tc.dirs)
		if got := roomUnder(sysfs, self); got != tc.want {
			t.Errorf("%s: room %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := roomUnder(t.TempDir(), filepath.Join(t.TempDir(), "none")); got != -1 {
		t.Errorf("no /proc/self/cgroup: %d, want -1", got)
	}
}

// TestPrewarmRefusedNearMemoryLimit: within prewarmHeadroom of the
// cgroup's limit, prewarm_agent starts nothing and says why; with room
// it starts the agent.
func TestPrewarmRefusedNearMemoryLimit(t *testing.T) {
	t.Parallel()
	r := newPrewarmRig(t, prewarmLimits)
	room := int64(prewarmHeadroom - 1)
	r.svc.pool().room = func() int64 { return room }
	if res, err := r.prewarm(aliceOpts()); err != nil || res.Started || res.Reason != protocol.PrewarmNoMemory || r.svc.pool().len() != 0 {
		t.Fatalf("near the limit: %+v %v, %d agents", res, err, r.svc.pool().len())
	}
	r2 := newPrewarmRig(t, prewarmLimits)
	r2.svc.pool().room = func() int64 { return prewarmHeadroom }
	if res, err := r2.prewarm(aliceOpts()); err != nil || !res.Started {
		t.Fatalf("with room: %+v %v", res, err)
	}
}
