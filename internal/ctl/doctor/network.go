package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
)

// --- network -----------------------------------------------------------------------

// checkNetwork shows each person's effective network mode (the default,
// and everyone the section names, by name or group) and compares it with
// their executor unit's PrivateNetwork= as systemd has it loaded.
func checkNetwork(ctx context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	n := d.cfg.Network
	modes, err := d.networkModes(ctx, n)
	if err != nil {
		return fail("check the user database (getent passwd USER)", "network modes: %v", err)
	}
	shown := []string{"default " + n.Default.Mode}
	for _, u := range sortedKeys(modes) {
		shown = append(shown, u+" "+modes[u])
	}
	summary := strings.Join(shown, ", ")
	private := n.Default.Private() || slices.ContainsFunc(sortedKeys(modes), func(u string) bool { return modes[u] != config.NetworkOpen })
	switch {
	case !private:
		return ok("%s", summary)
	case d.cfg.Execution.Backend != "systemd":
		return fail("set their mode to open, or use execution.backend systemd",
			"%s: the %s backend cannot enforce proxy or none, so those people are refused", summary, d.cfg.Execution.Backend)
	case !d.systemdUp():
		return skip("%s; systemd is not running here to compare units with", summary)
	}
	var wrong []string
	if n.Default.Private() {
		if m := d.unitPrivate(ctx, "agor-executor@"+d.sample+".service"); m != "yes" && !hasMode(modes, d.sample) {
			wrong = append(wrong, fmt.Sprintf("the default is %s but a new unit gets PrivateNetwork=%s", n.Default.Mode, m))
		}
	}
	for _, u := range sortedKeys(modes) {
		want := "no"
		if modes[u] != config.NetworkOpen {
			want = "yes"
		}
		if got := d.unitPrivate(ctx, "agor-executor@"+account.Escape(u)+".service"); got != want {
			wrong = append(wrong, fmt.Sprintf("%s is %s but has PrivateNetwork=%s", u, modes[u], got))
		}
	}
	if len(wrong) > 0 {
		return fail("sudo agorctl network apply (people under proxy or none are refused until their unit has PrivateNetwork=yes)",
			"%s; %s", summary, strings.Join(wrong, "; "))
	}
	if n.Default.Private() || slices.Contains(modeValues(modes), config.NetworkProxy) {
		if fi, err := os.Stat(d.path(n.SocketPath)); err != nil || fi.Mode().Type() != fs.ModeSocket {
			return fail("systemctl restart agor-daemon.socket agor-daemon.service (agor-daemon.socket makes "+n.SocketPath+")",
				"%s; the egress service's socket %s is missing: nobody under proxy gets out", summary, n.SocketPath)
		}
	}
	return ok("%s; units match", summary)
}

func hasMode(m map[string]string, u string) bool { _, ok := m[u]; return ok }

func modeValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// networkModes are the effective modes of everyone the section names: its
// users, and the listed members of its groups.
func (d *Doctor) networkModes(ctx context.Context, n config.Network) (map[string]string, error) {
	people := map[string]bool{}
	for u := range n.Users {
		people[u] = true
	}
	for _, g := range n.Groups {
		out, err := d.run(ctx, "getent", "group", "--", g.Group)
		if err != nil {
			continue
		}
		f := strings.Split(strings.TrimSpace(out), ":")
		if len(f) >= 4 && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				people[m] = true
			}
		}
	}
	modes := map[string]string{}
	for u := range people {
		set, err := n.For(u, func(g string) (bool, error) {
			usr, err := d.ids.LookupName(ctx, u)
			if err != nil {
				return false, err
			}
			return d.ids.InGroup(ctx, usr, g)
		})
		if err != nil {
			return nil, err
		}
		modes[u] = set.Mode
	}
	return modes, nil
}

// unitPrivate is a unit's PrivateNetwork= as systemd has it loaded.
func (d *Doctor) unitPrivate(ctx context.Context, unit string) string {
	out, err := d.run(ctx, "systemctl", "show", "-p", "PrivateNetwork", "--value", unit)
	if err != nil {
		return "unknown (" + strings.TrimSpace(out) + ")"
	}
	return strings.TrimSpace(out)
}

// checkNetworkNamespace checks, as root, that the mechanism works on this
// host: a transient unit with PrivateNetwork=yes sees loopback only.
func checkNetworkNamespace(ctx context.Context, d *Doctor) Finding {
	switch {
	case d.cfg == nil:
		return skip("no configuration read")
	case d.cfg.Execution.Backend != "systemd":
		return skip("network modes are enforced by systemd units; backend is %s", d.cfg.Execution.Backend)
	case !d.systemdUp():
		return skip("systemd is not running here")
	case d.euid != 0:
		return skip("run as root to start a test unit with PrivateNetwork=yes")
	}
	out, err := d.run(ctx, "systemd-run", "--quiet", "--wait", "--pipe", "--collect", "-p", "PrivateNetwork=yes",
		"-p", "DynamicUser=yes", "cat", "/proc/net/dev")
	if err != nil {
		return fail("the kernel needs network namespaces (CONFIG_NET_NS) and systemd PrivateNetwork=",
			"a unit with PrivateNetwork=yes did not run: %v: %s", err, strings.TrimSpace(out))
	}
	var ifs []string
	for _, l := range strings.Split(out, "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok && !strings.Contains(name, "|") {
			ifs = append(ifs, strings.TrimSpace(name))
		}
	}
	if !slices.Equal(ifs, []string{"lo"}) {
		return fail("the kernel needs network namespaces (CONFIG_NET_NS) and systemd PrivateNetwork=",
			"a unit with PrivateNetwork=yes sees interfaces %v, not only lo", ifs)
	}
	return ok("a unit with PrivateNetwork=yes sees only lo: proxy and none can be enforced here")
}
