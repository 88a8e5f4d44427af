package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/ctl/netunit"
	"github.com/agor-sh/agor/internal/executorunit"
)

func newNetwork(a *app) *cobra.Command {
	c := group(&cobra.Command{
		Use:   "network",
		Short: "put each person's network mode in force (root)",
		Long: `Each person's network egress is set in the network section of
/etc/agor/config.yaml: open (the host's network), proxy (a network namespace of
the executor's own whose only way out is the daemon's egress service, which
applies the allow and deny lists) or none (no way out). The lists take effect
at each connection; a mode takes effect once the executor's unit has the
matching PrivateNetwork= setting, which "network apply" writes.`,
		Example: `  sudo agorctl network apply
  agorctl doctor    # each person's mode, and whether their unit enforces it`,
	}, nil)
	c.AddCommand(newNetworkApply(a))
	return c
}

func newNetworkApply(a *app) *cobra.Command {
	var cfgPath, unitDir string
	var noRestart, dryRun bool
	c := &cobra.Command{
		Use:   "apply [USER...]",
		Short: "write the executors' network drop-ins, reload systemd, restart what changed",
		Long: `Write the systemd drop-ins that give each person's executor their network
mode, as root: the default's on the template
(/etc/systemd/system/agor-executor@.service.d/50-agor-network.conf), and one of
their own for each person whose mode differs from it. The people considered
are those the network section names, the members of the groups it names (as
getent lists them), each USER given, and everyone who has a drop-in already
(removed when no longer needed). Then systemctl daemon-reload, and every
running executor whose drop-in changed is stopped: its socket stays, and the
next request starts it in its new namespace (work running in it ends).

The daemon refuses to serve a person under proxy or none whose unit does not
have PrivateNetwork=yes, naming this command. Someone whose account is in a
named group only as its primary group is not listed by getent: name them.`,
		Example: `  sudo agorctl network apply
  sudo agorctl network apply alice --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return networkApply(cmd.Context(), a, cfgPath, unitDir, args, dryRun, noRestart)
		},
	}
	c.Flags().StringVar(&cfgPath, "config", config.DefaultPath, "daemon configuration `file`")
	c.Flags().StringVar(&unitDir, "unit-dir", "/etc/systemd/system", "where drop-ins are written (`directory`)")
	c.Flags().BoolVar(&noRestart, "no-restart", false, "leave running executors alone (a changed one keeps its old namespace until it exits)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be written, change nothing")
	return c
}

func networkApply(ctx context.Context, a *app, cfgPath, unitDir string, named []string, dryRun, noRestart bool) error {
	if os.Geteuid() != 0 && !dryRun {
		return errors.New("network apply writes systemd drop-ins under " + unitDir + ": run it as root (or with --dry-run)")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	for _, u := range named {
		if err := account.ValidName(u); err != nil {
			return usageErrorf("%v", err)
		}
	}
	users, err := networkUsers(cfg.Network, unitDir, named)
	if err != nil {
		return err
	}
	pol := executorunit.Policy{MinUID: cfg.Execution.MinUID}
	sets := map[string]config.NetworkSet{}
	for _, u := range users {
		set, err := executorunit.NetworkFor(ctx, cfg.Network, pol, u)
		if err != nil {
			if slices.Contains(named, u) {
				return fmt.Errorf("%s: %w", u, err)
			}
			fmt.Fprintf(a.stderr, "agorctl: %s: %v: given the default's mode\n", u, err)
			set = cfg.Network.Default
		}
		sets[u] = set
	}
	plan := netunit.MakePlan(cfg.Network, sets)
	if dryRun {
		printPlan(a, unitDir, plan)
		return nil
	}
	changed, err := netunit.Write(unitDir, plan)
	if err != nil {
		return err
	}
	for _, u := range changed {
		fmt.Fprintf(a.stdout, "%s: %s\n", netunit.Dir(unitDir, u), describeChange(plan, u))
	}
	envChanged, err := mirrorEnvs(a, unitDir)
	if err != nil {
		return err
	}
	if len(changed) == 0 && !envChanged {
		fmt.Fprintln(a.stdout, "network drop-ins already match the configuration")
		return nil
	}
	if out, err := exec.CommandContext(ctx, "systemctl", "daemon-reload").CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl daemon-reload: %v: %s", err, out)
	}
	if noRestart {
		return nil
	}
	return restartChanged(ctx, a, changed)
}

// networkUsers are the people apply decides for.
func networkUsers(n config.Network, unitDir string, named []string) ([]string, error) {
	set := map[string]bool{}
	for u := range n.Users {
		set[u] = true
	}
	for _, g := range n.Groups {
		for _, m := range groupMembers(g.Group) {
			set[m] = true
		}
	}
	for _, u := range named {
		set[u] = true
	}
	have, err := netunit.Existing(unitDir)
	if err != nil {
		return nil, err
	}
	for _, u := range have {
		set[u] = true
	}
	out := make([]string, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}

// groupMembers are group's listed members (getent group: its fourth field).
func groupMembers(group string) []string {
	out, err := exec.Command("getent", "group", "--", group).Output()
	if err != nil {
		return nil
	}
	f := strings.Split(strings.TrimSpace(string(out)), ":")
	if len(f) < 4 || f[3] == "" {
		return nil
	}
	return strings.Split(f[3], ",")
}

func describeChange(p netunit.Plan, user string) string {
	content := p.Template
	if user != "" {
		content = p.Users[user]
	}
	if content == "" {
		return "removed " + netunit.FileName
	}
	for _, l := range strings.Split(content, "\n") {
		if m, ok := strings.CutPrefix(l, "# network mode: "); ok {
			return "wrote " + netunit.FileName + " (mode " + m + ")"
		}
	}
	return "wrote " + netunit.FileName
}

func printPlan(a *app, unitDir string, p netunit.Plan) {
	fmt.Fprintf(a.stdout, "%s/%s:\n%s\n", netunit.Dir(unitDir, ""), netunit.FileName, orNone(p.Template))
	users := make([]string, 0, len(p.Users))
	for u := range p.Users {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		fmt.Fprintf(a.stdout, "%s/%s:\n%s\n", netunit.Dir(unitDir, u), netunit.FileName, orNone(p.Users[u]))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)\n"
	}
	return s
}

// restartChanged stops the running executors whose drop-in changed (all of
// them when the template's did); the socket starts each again on demand.
func restartChanged(ctx context.Context, a *app, changed []string) error {
	out, err := exec.CommandContext(ctx, "systemctl", "list-units", "--plain", "--no-legend", "--full", "--state=active", "agor-executor@*.service").Output()
	if err != nil {
		return fmt.Errorf("systemctl list-units: %w", err)
	}
	all := slices.Contains(changed, "")
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		inst := strings.TrimSuffix(strings.TrimPrefix(f[0], "agor-executor@"), ".service")
		user, err := account.Unescape(inst)
		if err != nil || !(all || slices.Contains(changed, user)) {
			continue
		}
		if out, err := exec.CommandContext(ctx, "systemctl", "stop", f[0]).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("systemctl stop %s: %v: %s", f[0], err, out))
			continue
		}
		fmt.Fprintf(a.stdout, "%s stopped: its next request starts it with the new network mode\n", f[0])
	}
	return errors.Join(errs...)
}

// mirrorEnvs gives every environment's units the executor's network
// drop-ins (netunit.Mirror). A running environment executor keeps its
// namespace until it exits when idle (or is stopped).
func mirrorEnvs(a *app, unitDir string) (bool, error) {
	prefixes, err := netunit.EnvPrefixes(unitDir)
	if err != nil {
		return false, err
	}
	changed := false
	for _, p := range prefixes {
		c, err := netunit.Mirror(unitDir, p)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", p, err)
		}
		if c {
			fmt.Fprintf(a.stdout, "%s@*.service.d: the executor's network drop-ins, mirrored\n", p)
		}
		changed = changed || c
	}
	return changed, nil
}
