package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// fakeBus answers like systemd and polkit with 50-agor.rules in force,
// with the executor units in props running.
type fakeBus struct {
	ruleLoaded bool
	props      map[string]map[string]uint64 // unit: property: value
}

func (b fakeBus) RunningExecutors(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(b.props)), nil
}

func (b fakeBus) UnitProperties(_ context.Context, unit string, names []string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, n := range names {
		v, ok := b.props[unit][n]
		if !ok {
			v = math.MaxUint64
		}
		out[n] = v
	}
	return out, nil
}

// ControlGroup is where systemd puts an executor's cgroup.
func (fakeBus) ControlGroup(_ context.Context, unit string) (string, error) {
	return "/agor.slice/agor-executors.slice/" + unit, nil
}

func (fakeBus) Close() error { return nil }
func (fakeBus) SystemdVersion(context.Context) (string, error) {
	return "252.38-1~deb12u1", nil
}
func (b fakeBus) Authorized(_ context.Context, _ Process, action string, d map[string]string) (bool, error) {
	setProperty := d["verb"] == "set-property" && strings.HasSuffix(d["unit"], ".service")
	return b.ruleLoaded && action == manageUnits && (d["verb"] == "start" || setProperty) && d["unit"] != "agor-executor@root.socket", nil
}

const fakeSecurity = `  NAME   DESCRIPTION   EXPOSURE
✓ PrivateNetwork=  ...
→ Overall exposure level for agor-executor@alice.service: 1.8 OK 🙂
`

// fixture is a healthy installation under a temporary root, owned by
// whoever runs the test: the fake account lookups map root and agor to
// that uid and gid.
func fixture(t *testing.T) (*Doctor, *[]string) {
	t.Helper()
	root := t.TempDir()
	dirs := map[string]os.FileMode{
		"/run/systemd/system": 0o755, "/usr/lib/systemd/system": 0o755, "/usr/share/polkit-1/rules.d": 0o700,
		"/etc/agor": 0o755, "/run/agor": 0o755, "/run/agor/executors": 0o750,
	}
	for d, mode := range dirs {
		mkdir(t, filepath.Join(root, d), mode)
	}
	for _, u := range units {
		write(t, filepath.Join(root, "/usr/lib/systemd/system", u), 0o644, "[Unit]\n")
	}
	write(t, filepath.Join(root, "/usr/share/polkit-1/rules.d/50-agor.rules"), 0o644, "polkit.addRule(function(){});\n")
	write(t, filepath.Join(root, masterKey), 0o600, "a2V5\n")
	write(t, filepath.Join(root, "/etc/agor/config.yaml"), 0o644, "execution:\n  allowed_groups: [agorusers]\ngateway:\n  enabled: true\n")
	gw, err := net.Listen("unix", filepath.Join(root, "/run/agor/gateway.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	write(t, filepath.Join(root, "/etc/passwd"), 0o644, "root:x:0:0::/root:/bin/sh\nagor:x:999:999::/var/lib/agor:/usr/sbin/nologin\nalice:x:1000:1000::/home/alice:/bin/bash\n")

	var ran []string
	uid, gid := os.Getuid(), os.Getgid()
	d := &Doctor{
		root:       root,
		configPath: filepath.Join(root, "/etc/agor/config.yaml"),
		apiSocket:  "/run/agor/daemon.sock",
		euid:       0,
		run: func(_ context.Context, name string, args ...string) (string, error) {
			ran = append(ran, name+" "+strings.Join(args, " "))
			switch {
			case name == "systemctl" && args[0] == "is-active":
				return "active\n", nil
			case name == "systemd-analyze" && args[0] == "verify":
				return "", nil
			case name == "systemd-analyze" && args[0] == "security":
				return fakeSecurity, nil
			case name == "systemd-run":
				return "Inter-|   Receive\n face |bytes\n    lo: 0 0\n", nil
			case name == "getent" && args[0] == "passwd":
				// Debian 13's Cockpit: a DynamicUser= account nss-systemd lists, not /etc/passwd; no directory's.
				return "root:x:0:0::/root:/bin/sh\ncockpit-wsinstance-https:x:63714:63714:Dynamic User:/:/usr/sbin/nologin\nada.lovelace:*:20001:20001:Ada:/home/ada.lovelace:/bin/bash\n", nil
			}
			return "", fmt.Errorf("unexpected command %s %v", name, args)
		},
		dial: func() (Bus, error) { return fakeBus{ruleLoaded: true}, nil },
		lookupUser: func(name string) (int, int, error) {
			if name == "root" || name == "agor" {
				return uid, gid, nil
			}
			return 0, 0, errors.New("unknown user " + name)
		},
		lookupGroup: func(name string) (int, error) {
			if name == "root" || name == "agor" {
				return gid, nil
			}
			return 0, errors.New("unknown group " + name)
		},
		health: func(context.Context, string) (apiwire.Health, error) {
			return apiwire.Health{Status: "ok", Version: "0.1.0", Storage: &apiwire.Storage{State: "ok", StateDir: "/var/lib/agor", FreeBytes: 10 << 30, MinFreeBytes: 64 << 20}}, nil
		},
		ids:          identity.New(fakeAccounts),
		landlock:     func() int { return 7 },
		executorView: func(context.Context, string) (string, bool) { return "namespace", true },
		spawnAs: func(uid, _ int) (Process, func(), error) {
			return Process{PID: 1, UID: int32(uid)}, func() {}, nil
		},
	}
	return d, &ran
}

// fakeAccounts is a user database with root, a directory user and the
// group agorusers.
var fakeAccounts = identity.Table{
	Users:  []identity.User{{Name: "root"}, {Name: "ada.lovelace", UID: 20001, GID: 20001}},
	Groups: []identity.Group{{Name: "agorusers", GID: 30000}},
}

// accountsLine is the accounts check's status and detail.
func accountsLine(out string) (string, string) {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "accounts" {
			return f[0], strings.Join(f[2:], " ")
		}
	}
	return "", ""
}

// TestDoctorAccounts: the check names the user database, a directory
// account it sees, and warns about configured names it cannot find.
func TestDoctorAccounts(t *testing.T) {
	d, _ := fixture(t)
	_, out := runDoctor(t, d, false)
	status, detail := accountsLine(out)
	if status != "ok" || !strings.Contains(detail, "user database table") || !strings.Contains(detail, "ada.lovelace (uid 20001)") {
		t.Fatalf("accounts: %s %s\n%s", status, detail, out)
	}
	write(t, d.configPath, 0o644, "execution:\n  allowed_groups: [agorusers, nosuchgroup]\n  allowed_users: [ghost]\n")
	_, out = runDoctor(t, d, false)
	if status, detail = accountsLine(out); status != "warn" || !strings.Contains(detail, "user ghost, group nosuchgroup") {
		t.Fatalf("accounts with missing names: %s %s", status, detail)
	}
	d.ids = identity.New(identity.NSS{Getent: "/bin/false"})
	_, out = runDoctor(t, d, false)
	if status, _ = accountsLine(out); status != "FAIL" {
		t.Fatalf("accounts with no answer: %s\n%s", status, out)
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p string, mode os.FileMode, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func runDoctor(t *testing.T, d *Doctor, asJSON bool) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Report(d.Run(context.Background()), asJSON, &out)
	return code, out.String()
}

func TestDoctorAllOK(t *testing.T) {
	d, ran := fixture(t)
	code, out := runDoctor(t, d, false)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(checks) {
		t.Fatalf("%d lines for %d checks:\n%s", len(lines), len(checks), out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "ok ") {
			t.Errorf("not ok: %s", l)
		}
	}
	for _, want := range []string{
		"agor-executor@alice.socket agor-executor@alice.service", // verify on an instance of the templates
		"security agor-executor@alice.service --no-pager",
	} {
		if !strings.Contains(strings.Join(*ran, "\n"), want) {
			t.Errorf("no command with %q in:\n%s", want, strings.Join(*ran, "\n"))
		}
	}
	for _, want := range []string{"backend systemd", "groups [agorusers]", "exposure 1.8", "systemd 252"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breaks func(t *testing.T, d *Doctor)
		check  string // the check that must FAIL
		want   string // in its detail
		fix    string // in its fix line
	}{
		{"no polkit rule", func(t *testing.T, d *Doctor) {
			os.Remove(filepath.Join(d.root, "/usr/share/polkit-1/rules.d/50-agor.rules"))
			d.dial = func() (Bus, error) { return fakeBus{}, nil }
		}, "polkit-rule", "50-agor.rules", "reinstall"},
		{"polkit rule not in effect", func(t *testing.T, d *Doctor) {
			d.dial = func() (Bus, error) { return fakeBus{}, nil }
		}, "polkit-effective", "50-agor.rules", "polkit"},
		{"executor directory mode", func(t *testing.T, d *Doctor) {
			mkdir(t, filepath.Join(d.root, "/run/agor/executors"), 0o755)
		}, "socket-dirs", "mode 0755, want 0750", "systemd-tmpfiles --create agor.conf"},
		{"no agor group", func(t *testing.T, d *Doctor) {
			d.lookupGroup = func(string) (int, error) { return 0, errors.New("unknown group agor") }
		}, "account", "group agor", "systemd-sysusers"},
		{"master key readable", func(t *testing.T, d *Doctor) {
			write(t, filepath.Join(d.root, masterKey), 0o644, "a2V5\n")
		}, "master-key", "mode 0644", "chmod 0600"},
		{"missing unit", func(t *testing.T, d *Doctor) {
			os.Remove(filepath.Join(d.root, "/usr/lib/systemd/system/agor-executor@.socket"))
		}, "units", "agor-executor@.socket", "reinstall"},
		{"bad config", func(t *testing.T, d *Doctor) {
			write(t, d.configPath, 0o644, "execution:\n  backend: docker\n")
		}, "config", "execution.backend", "correct"},
		{"daemon down", func(t *testing.T, d *Doctor) {
			d.health = func(context.Context, string) (apiwire.Health, error) {
				return apiwire.Health{}, errors.New("connection refused")
			}
		}, "daemon-api", "connection refused", "systemctl restart agor-daemon.socket"},
		{"store full", func(t *testing.T, d *Doctor) {
			d.health = func(context.Context, string) (apiwire.Health, error) {
				return apiwire.Health{Status: "ok", Version: "0.1.0", Storage: &apiwire.Storage{State: "full", StateDir: "/var/lib/agor",
					Reason: "database or disk is full", Pending: 2}}, nil
			}
		}, "store-space", "the store in /var/lib/agor is full", "free space on the filesystem of /var/lib/agor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := fixture(t)
			tc.breaks(t, d)
			code, out := runDoctor(t, d, false)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, out)
			}
			line, fix := findLine(out, tc.check)
			if !strings.HasPrefix(line, "FAIL") || !strings.Contains(line, tc.want) {
				t.Errorf("line %q: want FAIL with %q\n%s", line, tc.want, out)
			}
			if !strings.HasPrefix(fix, "fix: ") || !strings.Contains(fix, tc.fix) {
				t.Errorf("fix line %q: want %q", fix, tc.fix)
			}
		})
	}
}

// findLine returns the report line of check name and the line after it.
func findLine(out, name string) (string, string) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[1] == name && i+1 < len(lines) {
			return l, strings.TrimSpace(lines[i+1])
		}
	}
	return "", ""
}

func TestDoctorNotRoot(t *testing.T) {
	d, _ := fixture(t)
	d.euid = 1000
	code, out := runDoctor(t, d, false)
	line, _ := findLine(out, "polkit-effective")
	if code != 0 || !strings.HasPrefix(line, "warn") || !strings.Contains(line, "run agorctl doctor as root") {
		t.Fatalf("exit %d, polkit-effective %q:\n%s", code, line, out)
	}
}

func TestDoctorNoSystemd(t *testing.T) {
	d, ran := fixture(t)
	os.Remove(filepath.Join(d.root, "/run/systemd/system"))
	code, out := runDoctor(t, d, false)
	if code != 0 || len(slices.DeleteFunc(*ran, func(c string) bool { return c == "getent passwd" })) != 0 || !strings.Contains(out, "skipped: systemd is not running") {
		t.Fatalf("exit %d, ran %v:\n%s", code, *ran, out)
	}
}

func TestDoctorExposureAbove(t *testing.T) {
	d, _ := fixture(t)
	d.run = func(context.Context, string, ...string) (string, error) {
		return "→ Overall exposure level for agor-executor@alice.service: 4.2 OK\n", nil
	}
	f := checkExposure(context.Background(), d)
	if f.Status != StatusWarn || !strings.Contains(f.Detail, "4.2") {
		t.Fatalf("%+v", f)
	}
}

func TestDoctorJSON(t *testing.T) {
	d, _ := fixture(t)
	os.Remove(filepath.Join(d.root, "/usr/share/polkit-1/rules.d/50-agor.rules"))
	code, out := runDoctor(t, d, true)
	var got []Finding
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if code != 1 || len(got) != len(checks) {
		t.Fatalf("exit %d, %d Findings", code, len(got))
	}
	for _, f := range got {
		if f.Name == "polkit-rule" && (f.Status != StatusFail || f.Fix == "") {
			t.Errorf("polkit-rule: %+v", f)
		}
		if f.Name == "" || f.Detail == "" {
			t.Errorf("incomplete: %+v", f)
		}
	}
}

func TestDoctorSpawnAs(t *testing.T) {
	p, stop, err := spawnAs(os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if p.PID == 0 || p.Start == 0 || p.UID != int32(os.Getuid()) {
		t.Fatalf("%+v", p)
	}
}

// TestDoctorSandbox: the ABI and the policy are reported; a kernel without
// Landlock warns, or fails when the configuration requires the sandbox.
func TestDoctorSandbox(t *testing.T) {
	d, _ := fixture(t)
	line := func() string {
		_, out := runDoctor(t, d, false)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == "sandbox" {
				return l
			}
		}
		return ""
	}
	if l := line(); !strings.HasPrefix(l, "ok") || !strings.Contains(l, "Landlock ABI 7") {
		t.Fatalf("sandbox: %q", l)
	}
	// Where tasks run decides: an executor without Landlock (its unit's or
	// container's seccomp filter refusing the calls) though agorctl's own
	// process has it.
	d.executorLandlock = func(context.Context, string) (int, bool) { return 0, true }
	write(t, d.configPath, 0o644, "sandbox:\n  default: workspace\n  required: false\n")
	if l := line(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, "executor") || !strings.Contains(l, "unconfined") {
		t.Fatalf("an executor without Landlock: %q", l)
	}
	d.executorLandlock = nil
	d.landlock = func() int { return 0 }
	write(t, d.configPath, 0o644, "sandbox:\n  default: workspace\n  required: false\n")
	if l := line(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, "unconfined") {
		t.Fatalf("no Landlock, not required: %q", l)
	}
	write(t, d.configPath, 0o644, "sandbox:\n  default: workspace\n  required: true\n")
	if l := line(); !strings.HasPrefix(l, "FAIL") {
		t.Fatalf("no Landlock, required: %q", l)
	}
	// The packaged configuration: prompts confined, the default off.
	write(t, d.configPath, 0o644, "sandbox:\n  prompts: workspace\n  required: true\n")
	if l := line(); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "prompts workspace") {
		t.Fatalf("no Landlock, prompts workspace, required: %q", l)
	}
}

// With run_as_unix_user false, doctor says that everyone is one account
// and whether exec, files and terminals are on for persons.
func TestDoctorSharedAccount(t *testing.T) {
	d, _ := fixture(t)
	line := func() string {
		_, out := runDoctor(t, d, false)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == "shared-account" {
				return l
			}
		}
		return ""
	}
	if l := line(); !strings.HasPrefix(l, "ok") {
		t.Fatalf("own accounts: %q", l)
	}
	shared := "execution:\n  run_as_unix_user: false\n  executor_unix_user: agentsvc\n"
	write(t, d.configPath, 0o644, shared)
	if l := line(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, "agentsvc") || !strings.Contains(l, "off for persons") {
		t.Fatalf("shared, access off: %q", l)
	}
	write(t, d.configPath, 0o644, shared+"  shared_account_access: true\n")
	if l := line(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, "read the others'") {
		t.Fatalf("shared, access on: %q", l)
	}
}

// TestDoctorNetwork: each person's mode is shown; one under proxy or none
// whose unit lacks PrivateNetwork=yes fails naming agorctl network apply;
// other backends cannot enforce it; the namespace check runs a unit.
func TestDoctorNetwork(t *testing.T) {
	d, _ := fixture(t)
	if err := os.MkdirAll(filepath.Join(d.root, "/run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	private := "no"
	run := d.run
	d.run = func(ctx context.Context, name string, args ...string) (string, error) {
		if name == "systemctl" && args[0] == "show" && args[2] == "PrivateNetwork" {
			return private + "\n", nil
		}
		return run(ctx, name, args...)
	}
	line := func(name string) string {
		_, out := runDoctor(t, d, false)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == name {
				return l
			}
		}
		return ""
	}
	if l := line("network"); !strings.HasPrefix(l, "ok") || !strings.Contains(l, "default open") {
		t.Errorf("default: %q", l)
	}
	if l := line("network-ns"); !strings.HasPrefix(l, "ok") || !strings.Contains(l, "only lo") {
		t.Errorf("network-ns: %q", l)
	}
	write(t, d.configPath, 0o644, "network:\n  users:\n    alice: {mode: none}\n    bob: {mode: open}\n")
	_, out := runDoctor(t, d, false)
	if l := line("network"); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "alice none") || !strings.Contains(l, "alice is none but has PrivateNetwork=no") ||
		!strings.Contains(out, "fix: sudo agorctl network apply") {
		t.Errorf("alice none, unit without PrivateNetwork: %q\n%s", l, out)
	}
	private = "yes" // bob's too now: open with a namespace is a mismatch as well
	if l := line("network"); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "bob is open but has PrivateNetwork=yes") {
		t.Errorf("bob open, unit with PrivateNetwork: %q", l)
	}
	write(t, d.configPath, 0o644, "execution:\n  backend: direct\nnetwork:\n  users:\n    alice: {mode: proxy}\n")
	if l := line("network"); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "direct backend cannot enforce") {
		t.Errorf("direct backend: %q", l)
	}
}

// TestDoctorSandboxView: doctor says which guarantees hold where tasks
// run: ok with the namespace view; without it a warning naming what a
// confined task can still change, or a failure when required refuses.
func TestDoctorSandboxView(t *testing.T) {
	d, _ := fixture(t)
	line := func() string {
		_, out := runDoctor(t, d, false)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == "sandbox-view" {
				return l
			}
		}
		return ""
	}
	if l := line(); !strings.HasPrefix(l, "ok") || !strings.Contains(l, "any Landlock ABI") {
		t.Fatalf("with the view: %q", l)
	}
	d.executorView = func(context.Context, string) (string, bool) {
		return "no user namespaces for the sandbox's filesystem view: operation not permitted", true
	}
	write(t, d.configPath, 0o644, "sandbox:\n  default: off\n  required: false\n")
	if l := line(); !strings.HasPrefix(l, "warn") || !strings.Contains(l, "modes, ACLs and times") {
		t.Fatalf("no view, not required: %q", l)
	}
	write(t, d.configPath, 0o644, "sandbox:\n  default: off\n  required: true\n")
	if l := line(); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "refuses confined work") {
		t.Fatalf("no view, required: %q", l)
	}
}
