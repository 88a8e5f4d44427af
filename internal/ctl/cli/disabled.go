package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/disabled"
)

// What the guard disabled after confined work is hers to put back: these
// commands read her own record, run as her, and reach no daemon.

const disabledLong = `After confined work (--sandbox workspace) the executor looks at what the
work changed in its workspace, and disables what another program would run or
read later as configuration, unless it can show it to be inert: a repository's
config with keys it does not know to be inert (a config of the inert keys is
written in its place), a git hook, the state of a rebase with commands to come,
a .git file or pointer leading outside the workspace, project settings of
agents, editors and tools, and whatever it could not read whole or reach
within its bounds. Disabling renames NAME to NAME.agor-disabled (a directory
not examined whole also loses its permissions); nothing is deleted. The task's
result, its events, the audit trail and the executor's journal say each one.

Each is recorded in $HOME/.local/state/agor/disabled.jsonl, which these
commands read as you, without the daemon.`

func newDisabled(a *app) *cobra.Command {
	c := group(&cobra.Command{
		Use:     "disabled",
		Short:   "list or put back what the executor disabled after confined work",
		Long:    disabledLong,
		Example: "  agorctl disabled list\n  agorctl disabled restore ~/src/app",
	}, nil)
	var ledger string
	c.PersistentFlags().StringVar(&ledger, "record", "", "the record `file` (default $HOME/.local/state/agor/disabled.jsonl)")
	c.AddCommand(newDisabledList(a, &ledger), newDisabledRestore(a, &ledger))
	return c
}

func ledgerPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usageErrorf("no HOME: name the record with --record")
	}
	return disabled.Path(home), nil
}

func newDisabledList(a *app, ledger *string) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list what is disabled, and why",
		Long: `List each thing the executor disabled and has not been put back: where it
was, the name it has now, and why.`,
		Example: "  agorctl disabled list",
		Args:    noOperands,
		RunE: func(*cobra.Command, []string) error {
			path, err := ledgerPath(*ledger)
			if err != nil {
				return err
			}
			recs, err := disabled.Load(path)
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintf(a.stdout, "%s\t%s\t%s\n", r.Path, filepath.Base(r.Disabled), r.Why)
			}
			return nil
		},
	}
}

func newDisabledRestore(a *app, ledger *string) *cobra.Command {
	return &cobra.Command{
		Use:   "restore [PATH...]",
		Short: "put back what was disabled (all of it, or at or beneath each PATH)",
		Long: `Put back each thing the executor disabled, at or beneath each PATH (a
workspace, or one thing), or everything recorded when no PATH is given: the
last disabled first, NAME.agor-disabled renamed NAME again, a directory given
back its permissions, a config put back over the one of inert keys written in
its place. What is no longer what was disabled, or where something else is now
at its name, is left, and said; exit 1 then. Each line printed says what was
done: "restored PATH", "left PATH: why", "dropped PATH: no longer there".

What you put back runs again as it would have: the executor disabled it
because it could not show it runs nothing.`,
		Example: "  agorctl disabled restore\n  agorctl disabled restore ~/src/app ~/src/lib/.git/config",
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := ledgerPath(*ledger)
			if err != nil {
				return err
			}
			var under []string
			for _, p := range args {
				abs, err := filepath.Abs(p)
				if err != nil {
					return usageErrorf("%v", err)
				}
				under = append(under, abs)
			}
			return disabledRestore(a, path, under)
		},
	}
}

func disabledRestore(a *app, path string, under []string) error {
	out, err := disabled.Restore(path, under)
	if err != nil {
		return err
	}
	left := 0
	for _, o := range out {
		switch {
		case o.Restored && o.Note != "":
			fmt.Fprintf(a.stdout, "restored %s (%s)\n", o.Path, o.Note)
		case o.Restored:
			fmt.Fprintf(a.stdout, "restored %s\n", o.Path)
		case o.Gone:
			fmt.Fprintf(a.stdout, "dropped %s: %s\n", o.Path, o.Note)
		default:
			left++
			fmt.Fprintf(a.stdout, "left %s: %s\n", o.Path, o.Note)
		}
	}
	if len(out) == 0 {
		fmt.Fprintln(a.stdout, "nothing recorded to put back")
	}
	if left > 0 {
		return errors.New("some were left as they are (above)")
	}
	return nil
}
