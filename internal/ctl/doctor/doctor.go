// Package doctor checks an agor installation as an operator would: units,
// the daemon, D-Bus, the polkit rule in effect, the agor account,
// directories, the master key and the executor's exposure. Each check says
// what is wrong and how to fix it.
package doctor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// Statuses of a doctor check. A check that does not apply here is a warn
// whose detail starts with "skipped:".
const (
	StatusOK   = "ok"
	StatusFail = "FAIL"
	StatusWarn = "warn"
)

// Finding is one line of agorctl doctor's Report.
type Finding struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func ok(detail string, a ...any) Finding {
	return Finding{Status: StatusOK, Detail: fmt.Sprintf(detail, a...)}
}
func warn(detail string, a ...any) Finding {
	return Finding{Status: StatusWarn, Detail: fmt.Sprintf(detail, a...)}
}
func skip(reason string, a ...any) Finding {
	return Finding{Status: StatusWarn, Detail: "skipped: " + fmt.Sprintf(reason, a...)}
}
func fail(fix, detail string, a ...any) Finding {
	return Finding{Status: StatusFail, Detail: fmt.Sprintf(detail, a...), Fix: fix}
}

// Bus is what the checks ask of the system bus.
type Bus interface {
	SystemdVersion(ctx context.Context) (string, error)
	// Authorized asks polkit whether the process may do action with details.
	Authorized(ctx context.Context, p Process, action string, details map[string]string) (bool, error)
	// RunningExecutors lists the active agor-executor@*.service units.
	RunningExecutors(ctx context.Context) ([]string, error)
	// UnitProperties reads a service unit's uint64 properties.
	UnitProperties(ctx context.Context, unit string, names []string) (map[string]uint64, error)
	// ControlGroup is a unit's cgroup, below /sys/fs/cgroup.
	ControlGroup(ctx context.Context, unit string) (string, error)
	Close() error
}

// Doctor holds every input of the checks, so tests can swap the system
// for a directory and fakes.
type Doctor struct {
	root       string // prefix of the installation's fixed paths ("" on a host)
	configPath string
	apiSocket  string
	euid       int
	// run runs a command and returns its combined output.
	run func(ctx context.Context, name string, args ...string) (string, error)
	// dial connects to the system bus.
	dial        func() (Bus, error)
	lookupUser  func(name string) (uid, gid int, err error)
	lookupGroup func(name string) (gid int, err error)
	health      func(ctx context.Context, socket string) (apiwire.Health, error)
	// spawnAs starts a process as uid:gid for polkit to judge, and a
	// function that ends it.
	spawnAs func(uid, gid int) (Process, func(), error)
	// ids is the user database the daemon and executors ask.
	ids *identity.Resolver
	// landlock is the kernel's Landlock ABI (0: none) as agorctl's own
	// process sees it; executorLandlock as the sample user's executor
	// does, through the daemon (ok false: no executor could be asked).
	landlock         func() int
	executorLandlock func(ctx context.Context, user string) (abi int, ok bool)
	// executorView is whether the sample user's executor can build a
	// confined task's view ("namespace"), else why not (ok false: no
	// executor could be asked).
	executorView func(ctx context.Context, user string) (view string, ok bool)

	// user, when set, is the sample: the account the checks try.
	user string

	// Filled in as the checks run.
	storage *apiwire.Storage // as the daemon's health reports it
	cfg     *config.Config
	sample  string // an instance name for the executor templates
}

// ForUser makes name the account the checks try (a unit instance, the
// slurm backend's test job) instead of the first allowed one.
func (d *Doctor) ForUser(name string) *Doctor {
	d.user = name
	return d
}

func (d *Doctor) path(p string) string { return filepath.Join(d.root, p) }

// systemdUp reports whether systemd is PID 1 (sd_booted's test).
func (d *Doctor) systemdUp() bool {
	fi, err := os.Stat(d.path("/run/systemd/system"))
	return err == nil && fi.IsDir()
}

type check struct {
	name string
	fn   func(context.Context, *Doctor) Finding
}

// checks run in this order; later ones use what earlier ones found
// (the configuration, the sample user).
var checks = []check{
	{"config", checkConfig},
	{"accounts", checkAccounts},
	{"shared-account", checkSharedAccount},
	{"units", checkUnits},
	{"units-verify", checkVerify},
	{"daemon-active", checkDaemonActive},
	{"daemon-api", checkDaemonAPI},
	{"store-space", checkStoreSpace},
	{"dbus", checkDBus},
	{"polkit-rule", checkPolkitRule},
	{"polkit-effective", checkPolkitEffective},
	{"account", checkAccount},
	{"socket-dirs", checkSocketDirs},
	{"master-key", checkMasterKey},
	{"exposure", checkExposure},
	{"sandbox", checkSandbox},
	{"sandbox-view", checkSandboxView},
	{"limits", checkLimits},
	{"network", checkNetwork},
	{"network-ns", checkNetworkNamespace},
	{"gateway", checkGateway},
	{"environments", checkEnvironments},
	{"slurm-commands", checkSlurmCommands},
	{"slurm-tls", checkSlurmTLS},
	{"slurm-test-job", checkSlurmTestJob},
}

// Run runs every check in order and returns their findings.
func (d *Doctor) Run(ctx context.Context) []Finding {
	out := make([]Finding, 0, len(checks))
	for _, c := range checks {
		f := c.fn(ctx, d)
		f.Name = c.name
		out = append(out, f)
	}
	return out
}

// Report prints the findings, one "STATUS NAME DETAIL" line each with a
// "fix:" line under each failure, or as a JSON array; it returns the exit
// status: 1 if any check failed, else 0.
func Report(fs []Finding, asJSON bool, w io.Writer) int {
	code := 0
	for _, f := range fs {
		if f.Status == StatusFail {
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
		if f.Status == StatusFail && f.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		}
	}
	return code
}

// Host is the doctor of this host.
func Host(cfgPath, socket string) *Doctor {
	return &Doctor{
		configPath:  cfgPath,
		apiSocket:   socket,
		euid:        os.Geteuid(),
		run:         runCommand,
		dial:        dialSystemBus,
		lookupUser:  lookupUser,
		lookupGroup: lookupGroup,
		health:      health,
		spawnAs:     spawnAs,
		ids:         identity.Default(),
		landlock:    sandbox.ABI,
		executorLandlock: func(ctx context.Context, user string) (int, bool) {
			if p := executorPing(ctx, socket, user); p != nil {
				return p.LandlockABI, true
			}
			return 0, false
		},
		executorView: func(ctx context.Context, user string) (string, bool) {
			if p := executorPing(ctx, socket, user); p != nil {
				return p.SandboxView, true
			}
			return "", false
		},
	}
}

// executorPing is what user's executor says of itself (its Landlock ABI,
// its sandbox view): ensured through the daemon, as a task's would be;
// nil when it cannot be asked.
func executorPing(ctx context.Context, socket, user string) *protocol.PingResult {
	if user == "" {
		return nil
	}
	var out struct{ Ping *protocol.PingResult }
	if err := apiclient.New(socket).Do(ctx, "PUT", "/v1/executors/"+url.PathEscape(user), nil, &out); err != nil {
		return nil
	}
	return out.Ping
}

func runCommand(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func lookupUser(name string) (int, int, error) {
	u, err := identity.Default().LookupName(context.Background(), name)
	if err != nil {
		return 0, 0, err
	}
	return int(u.UID), int(u.GID), nil
}

func lookupGroup(name string) (int, error) {
	g, err := identity.Default().LookupGroup(context.Background(), name)
	if err != nil {
		return 0, err
	}
	return int(g.GID), nil
}

func health(ctx context.Context, socket string) (apiwire.Health, error) {
	var h apiwire.Health
	if err := apiclient.New(socket).Do(ctx, "GET", "/v1/health", nil, &h); err != nil {
		return h, err
	}
	if h.Status != "ok" || h.Version == "" {
		return h, fmt.Errorf("health: status %q, version %q", h.Status, h.Version)
	}
	return h, nil
}

// --- configuration -------------------------------------------------------------

func checkConfig(_ context.Context, d *Doctor) Finding {
	c, err := config.Load(d.configPath)
	if err != nil {
		return fail(fmt.Sprintf("correct %s or its drop-ins in config.d (see agor-daemon(8)), then systemctl restart agor-daemon.service", d.configPath), "%v", err)
	}
	d.cfg = &c
	d.sample = d.sampleUser(c.Execution)
	if d.user != "" {
		d.sample = d.user
	}
	e := c.Execution
	who := fmt.Sprintf("anyone with uid >= %d", e.MinUID)
	if len(e.AllowedUsers)+len(e.AllowedGroups) > 0 {
		who = fmt.Sprintf("users %v, groups %v (uid >= %d)", e.AllowedUsers, e.AllowedGroups, e.MinUID)
	}
	src := d.configPath
	if _, err := os.Stat(d.configPath); errors.Is(err, fs.ErrNotExist) {
		src += " missing: defaults"
	}
	// Load read them without error just now: an error here is a race.
	if drops, _ := config.DropIns(d.configPath); len(drops) > 0 {
		src += " with " + strings.Join(drops, ", ")
	}
	return ok("%s: backend %s, allowed: %s", src, e.Backend, who)
}

// sampleUser names an executor instance for the template checks: the
// first allowed user, else the first account at or above min_uid, else
// a placeholder (the checks need a valid name, not an account).
func (d *Doctor) sampleUser(e config.Execution) string {
	if len(e.AllowedUsers) > 0 {
		return e.AllowedUsers[0]
	}
	if u := firstUser(d.path("/etc/passwd"), e.MinUID); u != "" {
		return u
	}
	return "nobody"
}

func firstUser(passwd string, minUID int) string {
	for _, f := range passwdEntries(passwd) {
		if uid, err := strconv.Atoi(f[2]); err == nil && uid >= minUID && uid < 65534 {
			return f[0]
		}
	}
	return ""
}

// passwdEntries are the fields of each line of a passwd file with at
// least name, password and uid (none when it cannot be read).
func passwdEntries(path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); len(fields) >= 3 {
			out = append(out, fields)
		}
	}
	return out
}

func (d *Doctor) instance(suffix string) string {
	s := d.sample
	if s == "" {
		s = "nobody"
	}
	return "agor-executor@" + s + suffix
}
