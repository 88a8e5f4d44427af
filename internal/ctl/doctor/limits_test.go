package doctor

import (
	"math"
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
	status, detail := line(t, d, "limits")
	if status != "ok" || !strings.Contains(detail, "2 running executor(s)") {
		t.Fatalf("limits: %s %s", status, detail)
	}
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
