package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/godbus/dbus/v5"
)

// --- D-Bus and polkit -------------------------------------------------------------

func checkDBus(ctx context.Context, d *Doctor) Finding {
	if !d.systemdUp() {
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	b, err := d.dial()
	if err != nil {
		return fail("systemctl start dbus.service (the daemon manages executors over the system bus)", "system bus: %v", err)
	}
	defer b.Close()
	v, err := b.SystemdVersion(ctx)
	if err != nil {
		return fail("systemctl status dbus.service; the daemon needs systemd's D-Bus API", "org.freedesktop.systemd1 Manager.Version: %v", err)
	}
	return ok("system bus: systemd %s", v)
}

const polkitRule = "50-agor.rules"

var polkitDirs = []string{"/usr/share/polkit-1/rules.d", "/etc/polkit-1/rules.d"}

func checkPolkitRule(_ context.Context, d *Doctor) Finding {
	var denied bool
	for _, dir := range polkitDirs {
		_, err := os.Stat(d.path(filepath.Join(dir, polkitRule)))
		if err == nil {
			return ok("%s present", filepath.Join(dir, polkitRule))
		}
		denied = denied || errors.Is(err, fs.ErrPermission)
	}
	if denied {
		return skip("cannot look into %s as uid %d: run agorctl doctor as root", polkitDirs[0], d.euid)
	}
	return fail(reinstall+" (it installs "+filepath.Join(polkitDirs[0], polkitRule)+"; polkitd re-reads rules.d by itself)",
		"polkit rule %s missing from %s", polkitRule, strings.Join(polkitDirs, " and "))
}

const manageUnits = "org.freedesktop.systemd1.manage-units"

func checkPolkitEffective(ctx context.Context, d *Doctor) Finding {
	if d.euid != 0 {
		return skip("only root may ask polkit about another account: run agorctl doctor as root")
	}
	if !d.systemdUp() {
		return skip("systemd is not running here (no /run/systemd/system)")
	}
	uid, gid, err := d.lookupUser("agor")
	if err != nil {
		return skip("no agor account to ask about (see the account check)")
	}
	// polkit judges processes (and sessions, bus names), not accounts:
	// it is asked about a process of agor's.
	p, stop, err := d.spawnAs(uid, gid)
	if err != nil {
		return fail("run agorctl doctor as root on the host itself", "a process as agor to ask polkit about: %v", err)
	}
	defer stop()
	b, err := d.dial()
	if err != nil {
		return fail("systemctl start dbus.service polkit.service", "system bus: %v", err)
	}
	defer b.Close()
	return polkitAnswers(ctx, b, p, d.instance(".socket"))
}

func polkitAnswers(ctx context.Context, b Bus, p Process, unit string) Finding {
	const fix = "make sure polkitd runs (systemctl status polkit.service), is >= 0.106, and reads " +
		"/usr/share/polkit-1/rules.d/50-agor.rules; no earlier-sorting rule (e.g. /etc/polkit-1/rules.d/49-*.rules) may decide manage-units for agor"
	yes, err := b.Authorized(ctx, p, manageUnits, map[string]string{"unit": unit, "verb": "start"})
	if err != nil {
		return fail(fix, "polkit CheckAuthorization: %v", err)
	}
	if !yes {
		return fail(fix, "polkit rule 50-agor.rules not in effect: agor may not start %s", unit)
	}
	service := strings.TrimSuffix(unit, ".socket") + ".service"
	set, err := b.Authorized(ctx, p, manageUnits, map[string]string{"unit": service, "verb": "set-property"})
	if err != nil {
		return fail(fix, "polkit CheckAuthorization: %v", err)
	}
	if !set {
		return fail(fix, "polkit rule 50-agor.rules is an older one: agor may not set-property on %s (the executors' limits)", service)
	}
	root, err := b.Authorized(ctx, p, manageUnits, map[string]string{"unit": "agor-executor@root.socket", "verb": "start"})
	if err != nil {
		return fail(fix, "polkit CheckAuthorization: %v", err)
	}
	if root {
		return fail("remove the rule that lets agor manage agor-executor@root (grep -r agor /etc/polkit-1/rules.d /usr/share/polkit-1/rules.d)",
			"polkit lets agor start agor-executor@root.socket")
	}
	return ok("polkit: agor may start %s and set its service's limits, not agor-executor@root.socket", unit)
}

// systemBus is the real Bus.
type systemBus struct{ conn *dbus.Conn }

func dialSystemBus() (Bus, error) {
	c, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, err
	}
	return systemBus{c}, nil
}

func (b systemBus) Close() error { return b.conn.Close() }

func (b systemBus) SystemdVersion(ctx context.Context) (string, error) {
	var v dbus.Variant
	err := b.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, "org.freedesktop.systemd1.Manager", "Version").Store(&v)
	if err != nil {
		return "", err
	}
	s, _ := v.Value().(string)
	return s, nil
}

// Process is a polkit unix-process subject.
type Process struct {
	PID   uint32
	Start uint64 // in clock ticks since boot, /proc/PID/stat's 22nd field
	UID   int32
}

// spawnAs starts sleep(1) as uid:gid (root only).
func spawnAs(uid, gid int) (Process, func(), error) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := cmd.Start(); err != nil {
		return Process{}, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		stop()
		return Process{}, nil, err
	}
	return Process{PID: uint32(cmd.Process.Pid), Start: start, UID: int32(uid)}, stop, nil
}

func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:])) // from field 3 (state) on
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Authorized calls polkit's CheckAuthorization for a unix-process
// subject, without interaction (flags 0).
func (b systemBus) Authorized(ctx context.Context, p Process, action string, details map[string]string) (bool, error) {
	subject := struct {
		Kind    string
		Details map[string]dbus.Variant
	}{"unix-process", map[string]dbus.Variant{
		"pid": dbus.MakeVariant(p.PID), "start-time": dbus.MakeVariant(p.Start), "uid": dbus.MakeVariant(p.UID),
	}}
	var res struct {
		Authorized, Challenge bool
		Details               map[string]string
	}
	err := b.conn.Object("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority").
		CallWithContext(ctx, "org.freedesktop.PolicyKit1.Authority.CheckAuthorization", 0, subject, action, details, uint32(0), "").
		Store(&res)
	return res.Authorized, err
}
