package doctor

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/identity"
)

// The limits check reads what is in force on each running executor and
// names each difference from the configuration (default, group, user).
func TestDoctorLimits(t *testing.T) {
	d, _ := fixture(t)
	d.ids = identity.New(identity.Table{
		Users:   []identity.User{{Name: "ada.lovelace", UID: 20001, GID: 20001}, {Name: "bob", UID: 20002, GID: 20002}},
		Groups:  []identity.Group{{Name: "agorusers", GID: 30000}},
		Members: map[string][]string{"agorusers": {"bob"}},
	})
	write(t, d.configPath, 0o644, `limits:
  default: {memory_max: 1G, tasks_max: 100}
  groups: [{group: agorusers, memory_max: 2G, cpu_weight: 50}]
  users: {ada.lovelace: {tasks_max: 300}}
`)
	inForce := map[string]map[string]uint64{
		`agor-executor@ada.lovelace.service`: {"MemoryMax": 1 << 30, "TasksMax": 300, "CPUWeight": math.MaxUint64},
		`agor-executor@bob.service`:          {"MemoryMax": 2 << 30, "TasksMax": 100, "CPUWeight": 50},
	}
	d.dial = func() (Bus, error) { return fakeBus{ruleLoaded: true, props: inForce}, nil }
	// systemd holds the limits, but the cgroups have no controller files:
	// the kernel enforces nothing, and the check says so.
	status, detail := line(t, d, "limits")
	if status != "FAIL" || !strings.Contains(detail, "the kernel enforces none") ||
		!strings.Contains(detail, "agor-executor@bob.service has no memory.max, so the kernel enforces no MemoryMax") {
		t.Fatalf("limits with no controller in the cgroups: %s %s", status, detail)
	}
	cgroup(t, d, "agor-executor@ada.lovelace.service", map[string]string{"memory.max": "1073741824", "pids.max": "300", "cpu.weight": "100"})
	cgroup(t, d, "agor-executor@bob.service", map[string]string{"memory.max": "2147483648", "pids.max": "100", "cpu.weight": "50"})
	status, detail = line(t, d, "limits")
	if status != "ok" || !strings.Contains(detail, "kernel enforces") || !strings.Contains(detail, "2 running executor(s)") {
		t.Fatalf("limits: %s %s", status, detail)
	}
	cgroup(t, d, "agor-executor@bob.service", map[string]string{"pids.max": "max"}) // written behind systemd's back
	status, detail = line(t, d, "limits")
	if status != "FAIL" || !strings.Contains(detail, "agor-executor@bob.service: the kernel enforces pids.max unset/infinity, systemd holds TasksMax=100") {
		t.Fatalf("limits with pids.max written by hand: %s %s", status, detail)
	}
	cgroup(t, d, "agor-executor@bob.service", map[string]string{"pids.max": "100"})
	inForce[`agor-executor@bob.service`]["MemoryMax"] = 3 << 30 // set by hand
	status, detail = line(t, d, "limits")
	if status != "FAIL" || !strings.Contains(detail, "agor-executor@bob.service: MemoryMax is 3221225472, configured 2147483648 (limits memory_max)") {
		t.Fatalf("limits after a change by hand: %s %s", status, detail)
	}
	write(t, d.configPath, 0o644, "execution: {backend: systemd}\n")
	if status, detail = line(t, d, "limits"); status != "ok" || !strings.Contains(detail, "no limits configured") {
		t.Fatalf("no limits: %s %s", status, detail)
	}
}

// line runs the doctor and returns one check's status and detail.
func line(t *testing.T, d *Doctor, check string) (string, string) {
	t.Helper()
	_, out := runDoctor(t, d, false)
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == check {
			return f[0], strings.Join(f[2:], " ")
		}
	}
	t.Fatalf("no %s line in:\n%s", check, out)
	return "", ""
}

// cgroup writes files into unit's cgroup under the fixture's root.
func cgroup(t *testing.T, d *Doctor, unit string, files map[string]string) {
	t.Helper()
	dir := d.path("/sys/fs/cgroup/agor.slice/agor-executors.slice/" + unit)
	mkdir(t, dir, 0o755)
	for name, v := range files {
		write(t, filepath.Join(dir, name), 0o644, v+"\n")
	}
}

func TestReadCgroupValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		shown, content string
		want           uint64
	}{
		{"MemoryMax", "max\n", math.MaxUint64},
		{"MemoryMax", "1073741824\n", 1 << 30},
		{"CPUQuotaPerSecUSec", "50000 100000\n", 500_000},
		{"CPUQuotaPerSecUSec", "max 100000\n", math.MaxUint64},
		{"IOWeight", "default 100\n", 100},
	} {
		p := filepath.Join(dir, "f")
		write(t, p, 0o644, tc.content)
		got, err := readCgroupValue(p, tc.shown)
		if err != nil || got != tc.want {
			t.Errorf("%s %q = %d, %v; want %d", tc.shown, tc.content, got, err, tc.want)
		}
	}
	if _, err := readCgroupValue(filepath.Join(dir, "none"), "MemoryMax"); err != errNotEnforced {
		t.Errorf("a missing file: %v, want errNotEnforced", err)
	}
	write(t, filepath.Join(dir, "bad"), 0o644, "lots\n")
	if _, err := readCgroupValue(filepath.Join(dir, "bad"), "MemoryMax"); err == nil {
		t.Error("a bad value was read without an error")
	}
}
