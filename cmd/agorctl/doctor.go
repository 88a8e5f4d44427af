package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/agor-sh/agor/internal/config"
)

// Statuses of a doctor check. A check that does not apply here is a warn
// whose detail starts with "skipped:".
const (
	statusOK   = "ok"
	statusFail = "FAIL"
	statusWarn = "warn"
)

// finding is one line of agorctl doctor's doctorReport.
type finding struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func docOK(detail string, a ...any) finding {
	return finding{Status: statusOK, Detail: fmt.Sprintf(detail, a...)}
}
func docWarn(detail string, a ...any) finding {
	return finding{Status: statusWarn, Detail: fmt.Sprintf(detail, a...)}
}
func docSkip(reason string, a ...any) finding {
	return finding{Status: statusWarn, Detail: "skipped: " + fmt.Sprintf(reason, a...)}
}
func docFail(fix, detail string, a ...any) finding {
	return finding{Status: statusFail, Detail: fmt.Sprintf(detail, a...), Fix: fix}
}

// doctorBus is what the checks ask of the system bus.
type doctorBus interface {
	SystemdVersion(ctx context.Context) (string, error)
	// Authorized asks polkit whether the process may do action with details.
	Authorized(ctx context.Context, p doctorProcess, action string, details map[string]string) (bool, error)
	Close() error
}

// doctor holds every input of the checks, so tests can swap the system
// for a directory and fakes.
type doctor struct {
	root       string // prefix of the installation's fixed paths ("" on a host)
	configPath string
	apiSocket  string
	euid       int
	// run runs a command and returns its combined output.
	run func(ctx context.Context, name string, args ...string) (string, error)
	// dial connects to the system bus.
	dial        func() (doctorBus, error)
	lookupUser  func(name string) (uid, gid int, err error)
	lookupGroup func(name string) (gid int, err error)
	health      func(ctx context.Context, socket string) (string, error)
	// spawnAs starts a process as uid:gid for polkit to judge, and a
	// function that ends it.
	spawnAs func(uid, gid int) (doctorProcess, func(), error)

	// Filled in as the checks run.
	cfg    *config.Config
	sample string // an instance name for the executor templates
}

func (d *doctor) path(p string) string { return filepath.Join(d.root, p) }

// systemdUp reports whether systemd is PID 1 (sd_booted's test).
func (d *doctor) systemdUp() bool {
	fi, err := os.Stat(d.path("/run/systemd/system"))
	return err == nil && fi.IsDir()
}

type doctorCheck struct {
	name string
	fn   func(context.Context, *doctor) finding
}

// doctorChecks run in this order; later ones use what earlier ones found
// (the configuration, the sample user).
var doctorChecks = []doctorCheck{
	{"config", checkConfig},
	{"units", checkUnits},
	{"units-verify", checkVerify},
	{"daemon-active", checkDaemonActive},
	{"daemon-api", checkDaemonAPI},
	{"dbus", checkDBus},
	{"polkit-rule", checkPolkitRule},
	{"polkit-effective", checkPolkitEffective},
	{"account", checkAccount},
	{"socket-dirs", checkSocketDirs},
	{"master-key", checkMasterKey},
	{"exposure", checkExposure},
}

func (d *doctor) runChecks(ctx context.Context) []finding {
	out := make([]finding, 0, len(doctorChecks))
	for _, c := range doctorChecks {
		f := c.fn(ctx, d)
		f.Name = c.name
		out = append(out, f)
	}
	return out
}

// doctorCmd: agorctl doctor [--json] [--config FILE] [--api PATH]
func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfgPath string
	var asJSON bool
	a, rest, code, ok := parseAPI("doctor", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", config.DefaultPath, "daemon configuration `file`")
		fs.BoolVar(&asJSON, "json", false, "print a JSON array of {name, status, detail, fix}")
	})
	if !ok {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "agorctl doctor: unexpected argument %q\n", rest[0])
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	d := hostDoctor(cfgPath, a.socket)
	return doctorReport(d.runChecks(ctx), asJSON, stdout)
}

// doctorReport prints the findings; the status is 1 if any docFail.
func doctorReport(fs []finding, asJSON bool, w io.Writer) int {
	code := 0
	for _, f := range fs {
		if f.Status == statusFail {
			code = 1
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(fs)
		return code
	}
	for _, f := range fs {
		fmt.Fprintf(w, "%-4s  %-16s  %s\n", f.Status, f.Name, f.Detail)
		if f.Status == statusFail && f.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		}
	}
	return code
}

// hostDoctor is the doctor of this host.
func hostDoctor(cfgPath, socket string) *doctor {
	return &doctor{
		configPath:  cfgPath,
		apiSocket:   socket,
		euid:        os.Geteuid(),
		run:         doctorRun,
		dial:        doctorDialBus,
		lookupUser:  doctorLookupUser,
		lookupGroup: doctorLookupGroup,
		health:      doctorHealth,
		spawnAs:     doctorSpawnAs,
	}
}

func doctorRun(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func doctorLookupUser(name string) (int, int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}

func doctorLookupGroup(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

func doctorHealth(ctx context.Context, socket string) (string, error) {
	var h struct{ Status, Version string }
	if err := newAPIClient(socket).do(ctx, "GET", "/v1/health", nil, &h); err != nil {
		return "", err
	}
	if h.Status != "ok" || h.Version == "" {
		return "", fmt.Errorf("health: status %q, version %q", h.Status, h.Version)
	}
	return h.Version, nil
}

// --- configuration -------------------------------------------------------------

func checkConfig(_ context.Context, d *doctor) finding {
	c, err := config.Load(d.configPath)
	if err != nil {
		return docFail(fmt.Sprintf("correct %s (see agor-daemon(8)), then systemctl restart agor-daemon.service", d.configPath), "%v", err)
	}
	d.cfg = &c
	d.sample = d.sampleUser(c.Execution)
	e := c.Execution
	who := fmt.Sprintf("anyone with uid >= %d", e.MinUID)
	if len(e.AllowedUsers)+len(e.AllowedGroups) > 0 {
		who = fmt.Sprintf("users %v, groups %v (uid >= %d)", e.AllowedUsers, e.AllowedGroups, e.MinUID)
	}
	src := d.configPath
	if _, err := os.Stat(d.configPath); errors.Is(err, fs.ErrNotExist) {
		src += " missing: defaults"
	}
	return docOK("%s: backend %s, allowed: %s", src, e.Backend, who)
}

// sampleUser names an executor instance for the template checks: the
// first allowed user, else the first account at or above min_uid, else
// a placeholder (the checks need a valid name, not an account).
func (d *doctor) sampleUser(e config.Execution) string {
	if len(e.AllowedUsers) > 0 {
		return e.AllowedUsers[0]
	}
	if u := doctorFirstUser(d.path("/etc/passwd"), e.MinUID); u != "" {
		return u
	}
	return "nobody"
}

func doctorFirstUser(passwd string, minUID int) string {
	f, err := os.Open(passwd)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(fields[2]); err == nil && uid >= minUID && uid < 65534 {
			return fields[0]
		}
	}
	return ""
}

func (d *doctor) instance(suffix string) string {
	s := d.sample
	if s == "" {
		s = "nobody"
	}
	return "agor-executor@" + s + suffix
}

// --- units -----------------------------------------------------------------------

var doctorUnits = []string{"agor-daemon.service", "agor-daemon.socket", "agor-executor@.socket", "agor-executor@.service", "agor-executors.slice"}

var doctorUnitDirs = []string{"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

const doctorReinstall = "reinstall the package: apt-get install --reinstall agor (or dnf reinstall agor)"

func checkUnits(_ context.Context, d *doctor) finding {
	var missing []string
	for _, u := range doctorUnits {
		if !d.anyExists(doctorUnitDirs, u) {
			missing = append(missing, u)
		}
	}
	if len(missing) > 0 {
		return docFail(doctorReinstall+", then systemctl daemon-reload",
			"missing from %s: %s", strings.Join(doctorUnitDirs[:2], " and "), strings.Join(missing, ", "))
	}
	return docOK("%s", strings.Join(doctorUnits, ", "))
}

func (d *doctor) anyExists(dirs []string, name string) bool {
	for _, dir := range dirs {
		if _, err := os.Stat(d.path(filepath.Join(dir, name))); err == nil {
			return true
		}
	}
	return false
}

func checkVerify(ctx context.Context, d *doctor) finding {
	if !d.systemdUp() {
		return docSkip("systemd is not running here (no /run/systemd/system)")
	}
	units := []string{"agor-daemon.service", "agor-daemon.socket", d.instance(".socket"), d.instance(".service"), "agor-executors.slice"}
	out, err := d.run(ctx, "systemd-analyze", append([]string{"verify", "--man=no"}, units...)...)
	if err != nil {
		return docFail("fix what systemd-analyze verify --man=no "+strings.Join(units, " ")+" reports (a drop-in under /etc/systemd/system?), then systemctl daemon-reload",
			"systemd-analyze verify: %s", doctorOneLine(out, err))
	}
	if strings.TrimSpace(out) != "" {
		return docWarn("systemd-analyze verify: %s", doctorOneLine(out, nil))
	}
	return docOK("systemd-analyze verify: %s clean", strings.Join(units, " "))
}

// doctorOneLine squeezes a command's output and error into one line.
func doctorOneLine(out string, err error) string {
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

func checkDaemonActive(ctx context.Context, d *doctor) finding {
	if !d.systemdUp() {
		return docSkip("systemd is not running here (no /run/systemd/system)")
	}
	out, err := d.run(ctx, "systemctl", "is-active", "agor-daemon.service")
	if state := strings.TrimSpace(out); state != "active" {
		return docFail("systemctl enable --now agor-daemon.socket agor-daemon.service; if it fails, journalctl -u agor-daemon.service says why",
			"agor-daemon.service is %s", doctorOneLine(state, err))
	}
	return docOK("agor-daemon.service active")
}

func checkDaemonAPI(ctx context.Context, d *doctor) finding {
	v, err := d.health(ctx, d.apiSocket)
	if err != nil {
		return docFail("systemctl restart agor-daemon.socket agor-daemon.service, and check journalctl -u agor-daemon.service (or pass --api if the daemon listens elsewhere)",
			"GET /v1/health on %s: %v", d.apiSocket, err)
	}
	return docOK("GET /v1/health on %s: ok, version %s", d.apiSocket, v)
}

// --- D-Bus and polkit -------------------------------------------------------------

func checkDBus(ctx context.Context, d *doctor) finding {
	if !d.systemdUp() {
		return docSkip("systemd is not running here (no /run/systemd/system)")
	}
	b, err := d.dial()
	if err != nil {
		return docFail("systemctl start dbus.service (the daemon manages executors over the system bus)", "system bus: %v", err)
	}
	defer b.Close()
	v, err := b.SystemdVersion(ctx)
	if err != nil {
		return docFail("systemctl status dbus.service; the daemon needs systemd's D-Bus API", "org.freedesktop.systemd1 Manager.Version: %v", err)
	}
	return docOK("system bus: systemd %s", v)
}

const doctorPolkitRule = "50-agor.rules"

var doctorPolkitDirs = []string{"/usr/share/polkit-1/rules.d", "/etc/polkit-1/rules.d"}

func checkPolkitRule(_ context.Context, d *doctor) finding {
	var denied bool
	for _, dir := range doctorPolkitDirs {
		_, err := os.Stat(d.path(filepath.Join(dir, doctorPolkitRule)))
		if err == nil {
			return docOK("%s present", filepath.Join(dir, doctorPolkitRule))
		}
		denied = denied || errors.Is(err, fs.ErrPermission)
	}
	if denied {
		return docSkip("cannot look into %s as uid %d: run agorctl doctor as root", doctorPolkitDirs[0], d.euid)
	}
	return docFail(doctorReinstall+" (it installs "+filepath.Join(doctorPolkitDirs[0], doctorPolkitRule)+"; polkitd re-reads rules.d by itself)",
		"polkit rule %s missing from %s", doctorPolkitRule, strings.Join(doctorPolkitDirs, " and "))
}

const doctorManageUnits = "org.freedesktop.systemd1.manage-units"

func checkPolkitEffective(ctx context.Context, d *doctor) finding {
	if d.euid != 0 {
		return docSkip("only root may ask polkit about another account: run agorctl doctor as root")
	}
	if !d.systemdUp() {
		return docSkip("systemd is not running here (no /run/systemd/system)")
	}
	uid, gid, err := d.lookupUser("agor")
	if err != nil {
		return docSkip("no agor account to ask about (see the account check)")
	}
	// polkit judges processes (and sessions, bus names), not accounts:
	// it is asked about a process of agor's.
	p, stop, err := d.spawnAs(uid, gid)
	if err != nil {
		return docFail("run agorctl doctor as root on the host itself", "a process as agor to ask polkit about: %v", err)
	}
	defer stop()
	b, err := d.dial()
	if err != nil {
		return docFail("systemctl start dbus.service polkit.service", "system bus: %v", err)
	}
	defer b.Close()
	return doctorPolkitAnswers(ctx, b, p, d.instance(".socket"))
}

func doctorPolkitAnswers(ctx context.Context, b doctorBus, p doctorProcess, unit string) finding {
	const fix = "make sure polkitd runs (systemctl status polkit.service), is >= 0.106, and reads " +
		"/usr/share/polkit-1/rules.d/50-agor.rules; no earlier-sorting rule (e.g. /etc/polkit-1/rules.d/49-*.rules) may decide manage-units for agor"
	yes, err := b.Authorized(ctx, p, doctorManageUnits, map[string]string{"unit": unit, "verb": "start"})
	if err != nil {
		return docFail(fix, "polkit CheckAuthorization: %v", err)
	}
	if !yes {
		return docFail(fix, "polkit rule 50-agor.rules not in effect: agor may not start %s", unit)
	}
	root, err := b.Authorized(ctx, p, doctorManageUnits, map[string]string{"unit": "agor-executor@root.socket", "verb": "start"})
	if err != nil {
		return docFail(fix, "polkit CheckAuthorization: %v", err)
	}
	if root {
		return docFail("remove the rule that lets agor manage agor-executor@root (grep -r agor /etc/polkit-1/rules.d /usr/share/polkit-1/rules.d)",
			"polkit lets agor start agor-executor@root.socket")
	}
	return docOK("polkit: agor may start %s, not agor-executor@root.socket", unit)
}

// doctorSystemBus is the real doctorBus.
type doctorSystemBus struct{ conn *dbus.Conn }

func doctorDialBus() (doctorBus, error) {
	c, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, err
	}
	return doctorSystemBus{c}, nil
}

func (b doctorSystemBus) Close() error { return b.conn.Close() }

func (b doctorSystemBus) SystemdVersion(ctx context.Context) (string, error) {
	var v dbus.Variant
	err := b.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, "org.freedesktop.systemd1.Manager", "Version").Store(&v)
	if err != nil {
		return "", err
	}
	s, _ := v.Value().(string)
	return s, nil
}

// doctorProcess is a polkit unix-process subject.
type doctorProcess struct {
	PID   uint32
	Start uint64 // in clock ticks since boot, /proc/PID/stat's 22nd field
	UID   int32
}

// doctorSpawnAs starts sleep(1) as uid:gid (root only).
func doctorSpawnAs(uid, gid int) (doctorProcess, func(), error) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := cmd.Start(); err != nil {
		return doctorProcess{}, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	start, err := doctorStartTime(cmd.Process.Pid)
	if err != nil {
		stop()
		return doctorProcess{}, nil, err
	}
	return doctorProcess{PID: uint32(cmd.Process.Pid), Start: start, UID: int32(uid)}, stop, nil
}

func doctorStartTime(pid int) (uint64, error) {
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
func (b doctorSystemBus) Authorized(ctx context.Context, p doctorProcess, action string, details map[string]string) (bool, error) {
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

// --- account and directories ---------------------------------------------------------

func checkAccount(_ context.Context, d *doctor) finding {
	const fix = "systemd-sysusers agor.conf (from /usr/lib/sysusers.d/agor.conf)"
	uid, _, err := d.lookupUser("agor")
	if err != nil {
		return docFail(fix, "user agor: %v", err)
	}
	gid, err := d.lookupGroup("agor")
	if err != nil {
		return docFail(fix, "group agor: %v", err)
	}
	return docOK("user agor (uid %d), group agor (gid %d)", uid, gid)
}

// doctorDir is a directory's expected owner and mode.
type doctorDir struct {
	path, user, group string
	mode              fs.FileMode
}

var doctorSocketDirs = []doctorDir{
	{"/run/agor", "root", "root", 0o755},
	{"/run/agor/executors", "root", "agor", 0o750},
}

func checkSocketDirs(_ context.Context, d *doctor) finding {
	const fix = "systemd-tmpfiles --create agor.conf (from /usr/lib/tmpfiles.d/agor.conf)"
	var got []string
	for _, w := range doctorSocketDirs {
		desc, err := d.dirState(w)
		if err != nil {
			return docFail(fix+fmt.Sprintf("; or chown %s:%s %s && chmod %04o %s", w.user, w.group, w.path, w.mode, w.path), "%v", err)
		}
		got = append(got, desc)
	}
	return docOK("%s", strings.Join(got, ", "))
}

// dirState returns "PATH USER:GROUP MODE" or why it is not as wanted.
func (d *doctor) dirState(w doctorDir) (string, error) {
	fi, err := os.Stat(d.path(w.path))
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", w.path)
	}
	if fi.Mode().Perm() != w.mode {
		return "", fmt.Errorf("%s has mode %04o, want %04o", w.path, fi.Mode().Perm(), w.mode)
	}
	if err := d.owned(fi, w.path, w.user, w.group); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s:%s %04o", w.path, w.user, w.group, w.mode), nil
}

func (d *doctor) owned(fi fs.FileInfo, path, userName, groupName string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner information", path)
	}
	uid, _, err := d.lookupUser(userName)
	if err != nil {
		return fmt.Errorf("%s: user %s: %w", path, userName, err)
	}
	gid, err := d.lookupGroup(groupName)
	if err != nil {
		return fmt.Errorf("%s: group %s: %w", path, groupName, err)
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		return fmt.Errorf("%s is owned by %d:%d, want %s:%s", path, st.Uid, st.Gid, userName, groupName)
	}
	return nil
}

const doctorMasterKey = "/etc/agor/master.key"

func checkMasterKey(_ context.Context, d *doctor) finding {
	fi, err := os.Stat(d.path(doctorMasterKey))
	switch {
	case errors.Is(err, fs.ErrPermission):
		return docSkip("cannot see %s as uid %d: run agorctl doctor as root", doctorMasterKey, d.euid)
	case errors.Is(err, fs.ErrNotExist):
		return docFail("(umask 077 && head -c 32 /dev/urandom | base64 >"+doctorMasterKey+"), then systemctl restart agor-daemon.service; keys stored under an earlier key are lost",
			"%s missing: the daemon cannot start (LoadCredential=master-key)", doctorMasterKey)
	case err != nil:
		return docFail("check "+doctorMasterKey, "%v", err)
	}
	fixPerm := "chown root:root " + doctorMasterKey + " && chmod 0600 " + doctorMasterKey
	if fi.Mode().Perm() != 0o600 {
		return docFail(fixPerm, "%s has mode %04o, want 0600", doctorMasterKey, fi.Mode().Perm())
	}
	if err := d.owned(fi, doctorMasterKey, "root", "root"); err != nil {
		return docFail(fixPerm, "%v", err)
	}
	return docOK("%s root:root 0600", doctorMasterKey)
}

// --- exposure -----------------------------------------------------------------------

// doctorExposureTarget is the executor's systemd-analyze security score the
// package aims at or below.
const doctorExposureTarget = 2.0

var doctorExposureRE = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

func checkExposure(ctx context.Context, d *doctor) finding {
	if !d.systemdUp() {
		return docSkip("systemd is not running here (no /run/systemd/system)")
	}
	unit := d.instance(".service")
	out, err := d.run(ctx, "systemd-analyze", "security", unit, "--no-pager")
	m := doctorExposureRE.FindStringSubmatch(out)
	if m == nil {
		return docWarn("systemd-analyze security %s: no score: %s", unit, doctorOneLine(doctorLastLine(out), err))
	}
	score, _ := strconv.ParseFloat(m[1], 64)
	if score > doctorExposureTarget {
		return docWarn("%s exposure %.1f, above %.1f: a drop-in weakens its hardening? (systemctl cat %s)", unit, score, doctorExposureTarget, unit)
	}
	return docOK("%s exposure %.1f (target <= %.1f)", unit, score, doctorExposureTarget)
}

func doctorLastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
