package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
)

// --- limits ------------------------------------------------------------------------

// checkLimits compares, for each running executor, the resource limits
// systemd holds (its unit's properties, read over D-Bus) with what the
// configuration gives its user, then what the kernel enforces (the files
// of the unit's cgroup) with those, and names every difference; a
// controller missing from the cgroup is named as enforcing nothing.
func checkLimits(ctx context.Context, d *Doctor) Finding {
	switch {
	case d.cfg == nil:
		return skip("no configuration to compare with (see the config check)")
	case d.cfg.Limits.Empty():
		return ok("no limits configured: executors have their unit's and agor-executors.slice's own")
	case d.cfg.Execution.Backend != "systemd":
		return skip("limits are systemd unit properties; backend is %s", d.cfg.Execution.Backend)
	case !d.systemdUp():
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	b, err := d.dial()
	if err != nil {
		return fail("systemctl start dbus.service", "system bus: %v", err)
	}
	defer b.Close()
	units, err := b.RunningExecutors(ctx)
	if err != nil {
		return fail("systemctl status dbus.service", "list executor units: %v", err)
	}
	var diffs, kernel, missing []string
	for _, unit := range units {
		sd, got := d.limitDiffs(ctx, b, unit)
		diffs = append(diffs, sd...)
		if len(sd) == 0 && got != nil {
			k, m := d.kernelDiffs(ctx, b, unit, got)
			kernel, missing = append(kernel, k...), append(missing, m...)
		}
	}
	switch {
	case len(diffs) > 0:
		return fail("systemctl restart agor-daemon.service sets the configured limits on running executors again; "+
			"a persistent `systemctl set-property` (in /etc/systemd/system.control) outranks them: systemctl revert UNIT",
			"%s", strings.Join(diffs, "; "))
	case len(kernel) > 0:
		return fail("systemctl restart UNIT writes its cgroup again; something else wrote these files",
			"%s", strings.Join(kernel, "; "))
	case len(missing) > 0:
		return fail("run systemd on the unified cgroup hierarchy (cgroup v2) with the memory, pids, cpu and io controllers "+
			"delegated to it (in a container: by its host); until then the limits are settings, not limits",
			"systemd holds the configured limits, but the kernel enforces none of these: %s", strings.Join(missing, "; "))
	}
	return ok("limits the kernel enforces (cgroup memory.max, pids.max, cpu.max, ...) match the configuration on %d running executor(s)", len(units))
}

// limitDiffs are unit's differences from its user's configured limits,
// and the values systemd shows for them (nil when unread).
func (d *Doctor) limitDiffs(ctx context.Context, b Bus, unit string) ([]string, map[string]uint64) {
	user, err := instanceUser(unit)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", unit, err)}, nil
	}
	want, err := d.configuredLimits(ctx, user)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", unit, err)}, nil
	}
	names := make([]string, len(want))
	for i, p := range want {
		names[i] = p.Shown()
	}
	got, err := b.UnitProperties(ctx, unit, names)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", unit, err)}, nil
	}
	var out []string
	for _, p := range want {
		have := got[p.Shown()]
		if !d.limitMatches(p, have) {
			out = append(out, fmt.Sprintf("%s: %s is %s, configured %s (limits %s)", unit, p.Shown(), shownValue(have), shownValue(d.expected(p)), p.Key))
		}
	}
	return out, got
}

func instanceUser(unit string) (string, error) {
	inst := strings.TrimSuffix(strings.TrimPrefix(unit, "agor-executor@"), ".service")
	return account.Unescape(inst)
}

func (d *Doctor) configuredLimits(ctx context.Context, user string) ([]config.Property, error) {
	u, err := d.ids.LookupName(ctx, user)
	if err != nil {
		return nil, err
	}
	set, err := d.cfg.Limits.For(user, func(g string) (bool, error) { return d.ids.InGroup(ctx, u, g) })
	if err != nil {
		return nil, err
	}
	return d.cfg.Limits.Properties(set)
}

// limitMatches compares a value in force with a configured one. systemd
// turns a percentage into bytes of physical memory (or into tasks), so a
// memory percentage is compared within 1% and a tasks one only for being
// set.
func (d *Doctor) limitMatches(p config.Property, have uint64) bool {
	switch {
	case !p.Scaled():
		return have == p.Value
	case p.Shown() == "TasksMax":
		return have != config.Unset
	}
	want := d.expected(p)
	return want == 0 || math.Abs(float64(have)-float64(want)) <= float64(want)/100
}

// expected is the value systemd shows for p: for a memory percentage,
// that share of MemTotal (0 when unknown).
func (d *Doctor) expected(p config.Property) uint64 {
	if !p.Scaled() || p.Shown() == "TasksMax" {
		return p.Value
	}
	return uint64(float64(memTotal(d.path("/proc/meminfo"))) * float64(p.Value) / math.MaxUint32)
}

func memTotal(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func shownValue(v uint64) string {
	if v == config.Unset {
		return "unset/infinity"
	}
	return strconv.FormatUint(v, 10)
}

// RunningExecutors lists the active agor-executor@*.service units.
func (b systemBus) RunningExecutors(ctx context.Context) ([]string, error) {
	var units []struct {
		Name, Description, Load, Active, Sub, Following string
		Path                                            dbus.ObjectPath
		JobID                                           uint32
		JobType                                         string
		JobPath                                         dbus.ObjectPath
	}
	err := b.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").CallWithContext(ctx,
		"org.freedesktop.systemd1.Manager.ListUnitsByPatterns", 0, []string{"active"}, []string{"agor-executor@*.service"}).Store(&units)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(units))
	for _, u := range units {
		out = append(out, u.Name)
	}
	return out, nil
}

// UnitProperties reads unit's uint64 properties of the Service interface.
func (b systemBus) UnitProperties(ctx context.Context, unit string, names []string) (map[string]uint64, error) {
	var path dbus.ObjectPath
	mgr := b.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.GetUnit", 0, unit).Store(&path); err != nil {
		return nil, err
	}
	obj := b.conn.Object("org.freedesktop.systemd1", path)
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		var v dbus.Variant
		if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, "org.freedesktop.systemd1.Service", n).Store(&v); err != nil {
			return nil, fmt.Errorf("%s %s: %w", unit, n, err)
		}
		out[n], _ = v.Value().(uint64)
	}
	return out, nil
}

// ControlGroup is unit's cgroup path below /sys/fs/cgroup.
func (b systemBus) ControlGroup(ctx context.Context, unit string) (string, error) {
	var path dbus.ObjectPath
	mgr := b.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.GetUnit", 0, unit).Store(&path); err != nil {
		return "", err
	}
	var v dbus.Variant
	if err := b.conn.Object("org.freedesktop.systemd1", path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.systemd1.Service", "ControlGroup").Store(&v); err != nil {
		return "", fmt.Errorf("%s ControlGroup: %w", unit, err)
	}
	cg, _ := v.Value().(string)
	return cg, nil
}
