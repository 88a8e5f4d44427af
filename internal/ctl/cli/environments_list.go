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
	"github.com/agor-sh/agor/internal/envdef"
)

func newEnvList(a *app, p *envPaths) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the environments defined",
		Long: `List each environment: name, root or image, where agent CLIs come from, who may
use it, and whether its units are written.`,
		Example: "  agorctl environments list",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			defs, err := envdef.List(p.defs)
			if err != nil {
				return err
			}
			for _, d := range defs {
				fmt.Fprintf(a.stdout, "%s\t%s%s\tagents=%s\tusers=%s\tgroups=%s\tunits=%s\n", d.Name, d.Root, d.Image, d.Agents,
					strings.Join(d.Users, ","), strings.Join(d.Groups, ","), unitsState(p, d.Name))
			}
			return nil
		},
	}
}

// unitsState: "ok" when both units are written, else what is missing.
func unitsState(p *envPaths, name string) string {
	var missing []string
	for _, kind := range []string{"socket", "service"} {
		if _, err := os.Stat(filepath.Join(p.units, envunit.Unit(name, kind))); err != nil {
			missing = append(missing, envunit.Unit(name, kind))
		}
	}
	if len(missing) == 0 {
		return "ok"
	}
	return "missing:" + strings.Join(missing, ",")
}

func newEnvRemove(a *app, p *envPaths) *cobra.Command {
	var reload bool
	c := &cobra.Command{
		Use:   "remove NAME",
		Short: "stop an environment's executors, remove its units and definition",
		Long: `Stop every executor of environment NAME (their work ends), remove its units,
their drop-ins and its definition, and a tree add unpacked for it. A directory
or image given to add stays where it is.`,
		Example: "  sudo agorctl environments remove py313",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return envRemove(cmd.Context(), a, p, args[0], reload)
		},
	}
	c.Flags().BoolVar(&reload, "reload", true, "stop the units and run systemctl daemon-reload")
	return c
}

func envRemove(ctx context.Context, a *app, p *envPaths, name string, reload bool) error {
	if err := envdef.ValidName(name); err != nil {
		return usageErrorf("%v", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("environments remove deletes root-owned definitions and units: run it as root")
	}
	d, err := envdef.Load(p.defs, name)
	if err != nil {
		return err
	}
	if reload { // sockets first, so nothing starts a service being stopped
		pre := envunit.Prefix(name)
		_ = exec.CommandContext(ctx, "systemctl", "stop", pre+"@*.socket", pre+"@*.service").Run()
	}
	if err := removeUnits(p.units, name); err != nil {
		return err
	}
	if own := filepath.Join(p.state, name, "root"); d.Root == own {
		if err := os.RemoveAll(filepath.Dir(own)); err != nil {
			return err
		}
	}
	if err := os.Remove(envdef.Path(p.defs, name)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "environment %s removed\n", name)
	return daemonReload(ctx, reload)
}

func removeUnits(unitDir, name string) error {
	drop, err := filepath.Glob(filepath.Join(unitDir, envunit.Prefix(name)+"@*.service.d"))
	if err != nil {
		return err
	}
	for _, d := range drop {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	for _, kind := range []string{"socket", "service"} {
		if err := os.Remove(filepath.Join(unitDir, envunit.Unit(name, kind))); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
