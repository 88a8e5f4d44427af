package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// --- units -----------------------------------------------------------------------

var units = []string{"agor-daemon.service", "agor-daemon.socket", "agor-executor@.socket", "agor-executor@.service", "agor-executors.slice"}

var unitDirs = []string{"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

const reinstall = "reinstall the package: apt-get install --reinstall agor (or dnf reinstall agor)"

func checkUnits(_ context.Context, d *Doctor) Finding {
	var missing []string
	for _, u := range units {
		if !d.anyExists(unitDirs, u) {
			missing = append(missing, u)
		}
	}
	if len(missing) > 0 {
		return fail(reinstall+", then systemctl daemon-reload",
			"missing from %s: %s", strings.Join(unitDirs[:2], " and "), strings.Join(missing, ", "))
	}
	return ok("%s", strings.Join(units, ", "))
}

func (d *Doctor) anyExists(dirs []string, name string) bool {
	for _, dir := range dirs {
		if _, err := os.Stat(d.path(filepath.Join(dir, name))); err == nil {
			return true
		}
	}
	return false
}

func checkVerify(ctx context.Context, d *Doctor) Finding {
	if !d.systemdUp() {
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	units := []string{"agor-daemon.service", "agor-daemon.socket", d.instance(".socket"), d.instance(".service"), "agor-executors.slice"}
	out, err := d.run(ctx, "systemd-analyze", append([]string{"verify", "--man=no"}, units...)...)
	if err != nil {
		return fail("fix what systemd-analyze verify --man=no "+strings.Join(units, " ")+" reports (a drop-in under /etc/systemd/system?), then systemctl daemon-reload",
			"systemd-analyze verify: %s", oneLine(out, err))
	}
	if strings.TrimSpace(out) != "" {
		return warn("systemd-analyze verify: %s", oneLine(out, nil))
	}
	return ok("systemd-analyze verify: %s clean", strings.Join(units, " "))
}

// oneLine squeezes a command's output and error into one line.
func oneLine(out string, err error) string {
	s := strings.Join(strings.Fields(out), " ")
	if err != nil {
		s = strings.TrimSpace(s + " (" + err.Error() + ")")
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// --- daemon -------------------------------------------------------------------

func checkDaemonActive(ctx context.Context, d *Doctor) Finding {
	if !d.systemdUp() {
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	out, err := d.run(ctx, "systemctl", "is-active", "agor-daemon.service")
	if state := strings.TrimSpace(out); state != "active" {
		return fail("systemctl enable --now agor-daemon.socket agor-daemon.service; if it fails, journalctl -u agor-daemon.service says why",
			"agor-daemon.service is %s", oneLine(state, err))
	}
	return ok("agor-daemon.service active")
}

func checkDaemonAPI(ctx context.Context, d *Doctor) Finding {
	h, err := d.health(ctx, d.apiSocket)
	if err != nil {
		return fail("systemctl restart agor-daemon.socket agor-daemon.service, and check journalctl -u agor-daemon.service (or pass --api if the daemon listens elsewhere)",
			"GET /v1/health on %s: %v", d.apiSocket, err)
	}
	d.storage = h.Storage
	return ok("GET /v1/health on %s: ok, version %s", d.apiSocket, h.Version)
}

// checkStoreSpace reports the daemon's store as the daemon sees it: full
// (new tasks refused with storage_full) or how much room is left above
// store.min_free_bytes.
func checkStoreSpace(_ context.Context, d *Doctor) Finding {
	s := d.storage
	if s == nil {
		return skip("the daemon did not report its store (daemon-api)")
	}
	if s.State != "ok" {
		return fail(fmt.Sprintf("free space on the filesystem of %s (or raise its size, or lower store.min_free_bytes); the daemon resumes by itself", s.StateDir),
			"the store in %s is full since %s: %s; new tasks are refused (storage_full), %d statuses wait in memory",
			s.StateDir, since(s.Since), s.Reason, s.Pending)
	}
	if s.FreeBytes >= 0 && s.FreeBytes < 2*s.MinFreeBytes {
		return warn("%s has %d MiB free, near store.min_free_bytes (%d MiB), below which new tasks are refused", s.StateDir, s.FreeBytes>>20, s.MinFreeBytes>>20)
	}
	return ok("%s: %d MiB free (store.min_free_bytes %d MiB)", s.StateDir, s.FreeBytes>>20, s.MinFreeBytes>>20)
}

func since(t *time.Time) string {
	if t == nil {
		return "?"
	}
	return t.Local().Format(time.DateTime)
}

// --- exposure -----------------------------------------------------------------------

// exposureTarget is the executor's systemd-analyze security score the
// package aims at or below.
const exposureTarget = 2.5 // the task sandbox's namespaces, IPC's too, cost a little (docs/security.md)

var exposureRE = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

func checkExposure(ctx context.Context, d *Doctor) Finding {
	if !d.systemdUp() {
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	unit := d.instance(".service")
	out, err := d.run(ctx, "systemd-analyze", "security", unit, "--no-pager")
	m := exposureRE.FindStringSubmatch(out)
	if m == nil {
		return warn("systemd-analyze security %s: no score: %s", unit, oneLine(lastLine(out), err))
	}
	score, _ := strconv.ParseFloat(m[1], 64)
	if score > exposureTarget {
		return warn("%s exposure %.1f, above %.1f: a drop-in weakens its hardening? (systemctl cat %s)", unit, score, exposureTarget, unit)
	}
	return ok("%s exposure %.1f (target <= %.1f)", unit, score, exposureTarget)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
