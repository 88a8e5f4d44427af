package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/envunit"
	"github.com/agor-sh/agor/internal/ctl/netunit"
	"github.com/agor-sh/agor/internal/envdef"
)

// envFlagUsage is --env's help, for the commands that take it.
const envFlagUsage = "run in environment `NAME` (agorctl environments list; \"host\": the host; default: the daemon's environments.default)"

// envPaths are where environments live; flags change them for tests.
type envPaths struct {
	defs, units, state string
}

func newEnvironments(a *app) *cobra.Command {
	p := &envPaths{}
	c := group(&cobra.Command{
		Use:     "environments",
		Aliases: []string{"env"},
		Short:   "define the roots a person's executor may run in (root)",
		Long: `An environment is a root tree (a directory, or a tarball as mmdebstrap makes it)
or a disk image that an operator defines, and in which a person's executor can
run as herself: same account, cgroup slice, limits, hardening and network mode
as her executor on the host, with /home bound in. Who may use it is listed by
user and group; nobody else can. People pick one per session (agorctl prompt
--env NAME, exec --env, terminal --env; environments.default in the
configuration).

add writes /etc/agor/environments/NAME.yaml and renders
/etc/systemd/system/agor-env-NAME@.socket and .service from the installed
agor-executor@ units; see docs/operations.md for building a root.`,
		Example: `  sudo agorctl environments add py313 --root /srv/envs/py313.tar.zst --users alice --groups dev
  agorctl environments list
  sudo agorctl environments remove py313`,
	}, nil)
	c.PersistentFlags().StringVar(&p.defs, "dir", envdef.DefaultDir, "where definitions are kept (`directory`)")
	c.PersistentFlags().StringVar(&p.units, "unit-dir", "/etc/systemd/system", "where the units are written (`directory`)")
	c.PersistentFlags().StringVar(&p.state, "state-dir", envdef.StateDir, "where tarballs are unpacked (`directory`)")
	c.AddCommand(newEnvAdd(a, p), newEnvList(a, p), newEnvRemove(a, p))
	return c
}

func newEnvAdd(a *app, p *envPaths) *cobra.Command {
	var d envdef.Definition
	var root string
	var reload bool
	c := &cobra.Command{
		Use:   "add NAME --root DIR|TARBALL|IMAGE",
		Short: "define an environment and write its units",
		Long: `Define environment NAME ([a-z0-9][a-z0-9-]*) and write its units, as root.
--root is a directory tree, a tarball (.tar, .tar.gz, .tar.xz, .tar.zst;
unpacked under /var/lib/agor/environments/NAME/root) or a disk image (any other
file; RootImage=, which needs loop devices). Adding a name again replaces it.`,
		Example: `  sudo agorctl environments add py313 --root /srv/envs/py313.tar.zst --users alice
  sudo agorctl environments add tools --root /srv/tools --groups dev --agents image --bind /srv/data`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d.Name = args[0]
			return envAdd(cmd.Context(), a, p, d, root, reload)
		},
	}
	f := c.Flags()
	f.StringVar(&root, "root", "", "the root: a `directory`, tarball or disk image")
	f.StringVar(&d.Agents, "agents", envdef.AgentsHost, "agent CLIs from the `host` (its /usr/local and /opt bound read-only) or the image")
	f.StringSliceVar(&d.Users, "users", nil, "`users` who may use it")
	f.StringSliceVar(&d.Groups, "groups", nil, "members of these `groups` may use it")
	f.StringSliceVar(&d.Bind, "bind", nil, "host `paths` bound read-write at the same place, besides /home")
	f.StringSliceVar(&d.BindReadOnly, "bind-ro", nil, "host `paths` bound read-only at the same place")
	f.BoolVar(&reload, "reload", true, "run systemctl daemon-reload afterwards")
	_ = c.MarkFlagRequired("root")
	return c
}

func envAdd(ctx context.Context, a *app, p *envPaths, d envdef.Definition, root string, reload bool) error {
	if err := envdef.ValidName(d.Name); err != nil {
		return usageErrorf("%v", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("environments add writes root-owned definitions and units: run it as root")
	}
	if err := placeRoot(ctx, p, &d, root); err != nil {
		return err
	}
	if err := d.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if err := writeUnits(p, d); err != nil {
		return err
	}
	if err := envdef.Save(p.defs, d); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: environment %s (%s%s), units %s and %s\n", envdef.Path(p.defs, d.Name), d.Name, d.Root, d.Image,
		envunit.Unit(d.Name, "socket"), envunit.Unit(d.Name, "service"))
	if len(d.Users) == 0 && len(d.Groups) == 0 {
		fmt.Fprintln(a.stderr, "agorctl: nobody may use it yet: add --users or --groups")
	}
	return daemonReload(ctx, reload)
}

// placeRoot sets d's root from what --root names: a directory as is, a
// tarball unpacked under the state directory, any other file an image.
func placeRoot(ctx context.Context, p *envPaths, d *envdef.Definition, root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("--root: %w", err)
	}
	switch {
	case st.IsDir():
		d.Root = abs
	case isTarball(abs):
		d.Root, err = unpack(ctx, abs, filepath.Join(p.state, d.Name, "root"))
	default:
		d.Image = abs
	}
	return err
}

func isTarball(path string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar.bz2"} {
		if strings.HasSuffix(path, ext) {
			return true
		}
	}
	return false
}

// unpack extracts a tarball into dest, replacing what was there, with
// owners and modes as stored (the tree is the image's, not root's
// choice now).
func unpack(ctx context.Context, tarball, dest string) (string, error) {
	if err := os.RemoveAll(dest); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "tar", "-x", "--numeric-owner", "-p", "-f", tarball, "-C", dest)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %v: %s", tarball, err, out)
	}
	return dest, nil
}

// writeUnits renders d's units from the installed executor units, and
// gives them the executor's network drop-ins.
func writeUnits(p *envPaths, d envdef.Definition) error {
	svc, sock, err := readShipped()
	if err != nil {
		return err
	}
	svc, sock, err = envunit.Render(svc, sock, d)
	if err != nil {
		return err
	}
	for kind, text := range map[string]string{"service": svc, "socket": sock} {
		if err := os.WriteFile(filepath.Join(p.units, envunit.Unit(d.Name, kind)), []byte(text), 0o644); err != nil {
			return err
		}
	}
	_, err = netunit.Mirror(p.units, envunit.Prefix(d.Name))
	return err
}

// readShipped reads the packaged agor-executor@ units.
func readShipped() (string, string, error) {
	for _, dir := range envunit.Shipped {
		svc, err := os.ReadFile(filepath.Join(dir, "agor-executor@.service"))
		if err != nil {
			continue
		}
		sock, err := os.ReadFile(filepath.Join(dir, "agor-executor@.socket"))
		if err != nil {
			return "", "", err
		}
		return string(svc), string(sock), nil
	}
	return "", "", fmt.Errorf("no agor-executor@.service in %s: is agor installed?", strings.Join(envunit.Shipped, ", "))
}

func daemonReload(ctx context.Context, reload bool) error {
	if !reload {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "systemctl", "daemon-reload").CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl daemon-reload: %v: %s", err, out)
	}
	return nil
}
