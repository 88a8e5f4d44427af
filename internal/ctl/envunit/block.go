package envunit

import (
	"fmt"
	"strings"

	"github.com/agor-sh/agor/internal/envdef"
)

// hostReadOnly is what every environment's executor reads from the host:
//   - /etc/agor: config.yaml (its own allow check, agents.yaml) and the
//     environment's definition (the allow check of the environment);
//   - /etc/passwd, /etc/group: so the person's uid has her name inside
//     and group checks agree with the host's (the image's NSS modules
//     are its own: an account only a directory knows needs them there);
//   - /etc/resolv.conf, /etc/hosts: name resolution as on the host ("-":
//     a host may lack one);
//   - /run/agor: the daemon's egress and gateway sockets, which the
//     executor dials (connect(2) works on a read-only mount). The
//     executors' own socket directory in it stays root:agor 0750;
//   - /run/systemd/notify: the executor is Type=notify and has a
//     watchdog; MountAPIVFS= gives the root an empty /run.
var hostReadOnly = []string{"/etc/agor", "/etc/passwd", "/etc/group", "-/etc/resolv.conf", "-/etc/hosts", "/run/agor", "-/run/systemd/notify"}

// hostAgents is where the host's agent CLIs live (npm -g installs under
// /usr/local, vendors' tarballs under /opt), bound read-only with
// --agents host. The image's /usr stays the image's.
var hostAgents = []string{"-/usr/local", "-/opt"}

// serviceBlock is what an environment adds to the executor's [Service].
func serviceBlock(d envdef.Definition, exe string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Environment %s: the same User=, slice, limits and hardening as the\n", d.Name)
	b.WriteString("# host's executor, in another root with the person's files bound in.\n")
	fmt.Fprintf(&b, "Environment=AGOR_EXECUTOR_ENVIRONMENT=%s\n", d.Name)
	if d.Root != "" {
		fmt.Fprintf(&b, "RootDirectory=%s\n", d.Root)
	} else {
		fmt.Fprintf(&b, "RootImage=%s\n", d.Image)
	}
	// /proc, /sys, /dev and an empty /run inside the root, as on the host.
	b.WriteString("MountAPIVFS=yes\n")
	ro := append([]string{exe}, hostReadOnly...)
	if d.Agents == envdef.AgentsHost {
		ro = append(ro, hostAgents...)
	}
	ro = append(ro, d.BindReadOnly...)
	fmt.Fprintf(&b, "BindReadOnlyPaths=%s\n", strings.Join(ro, " "))
	// Homes (hers, with her workspaces) always, read-write as on the host;
	// the kernel's permissions keep the others' homes theirs.
	fmt.Fprintf(&b, "BindPaths=%s\n", strings.Join(append([]string{"/home"}, d.Bind...), " "))
	return b.String()
}
