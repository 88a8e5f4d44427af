package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/account"
)

// accountsHelp says what an orphan is, for the family and its commands.
const accountsHelp = `Everything the daemon stores for a person (sessions with their tasks and
events, API keys) carries the account's user name and uid. When an account
is deleted and its name given to someone else (another uid), nothing of the
earlier account is visible or usable under the name; what it left is an
orphan, listed here for an admin to purge. Data stored before uids were
recorded whose account was already gone at the upgrade has uid -1.`

func newAccounts(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "accounts",
		Short: "list and purge what deleted accounts left (admins)",
		Long: accountsHelp + `

` + daemonHelp,
		Example: `  agorctl accounts orphans
  agorctl accounts purge alice --uid 1000`,
	}
	group(c, nil)
	c.AddCommand(newAccountsOrphans(a), newAccountsPurge(a))
	return c
}

func newAccountsOrphans(a *app) *cobra.Command {
	var f apiFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "orphans",
		Short: "list what accounts that no longer exist left",
		Long: `List what accounts that no longer exist left: a table of USER UID NOW
SESSIONS TASKS EVENTS CREDENTIALS (NOW is the uid the name has today, "-"
when no account has it), or the daemon's JSON with --json. Root and admins
only.

` + accountsHelp + `

` + daemonHelp,
		Example: `  agorctl accounts orphans
  agorctl accounts orphans --json`,
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			out, raw, err := c.Orphans(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				fmt.Fprintln(a.stdout, string(raw))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tUID\tNOW\tSESSIONS\tTASKS\tEVENTS\tCREDENTIALS")
			for _, o := range out.Orphans {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\n", o.Name, o.UID, nowUID(o.CurrentUID), o.Sessions, o.Tasks, o.Events, orDash(strings.Join(o.Credentials, ",")))
			}
			return tw.Flush()
		},
	}
	addAPIFlags(c, &f)
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON")
	return c
}

func newAccountsPurge(a *app) *cobra.Command {
	var f apiFlags
	var uid int64
	c := &cobra.Command{
		Use:   "purge USER --uid UID",
		Short: "delete what an account that no longer exists left",
		Long: `Delete what the account that had the name USER with uid UID left: its
sessions with their tasks and events, and its API keys. Refused while USER
is still uid UID. UID -1 is data stored before uids were recorded whose
account was already gone at the upgrade. Root and admins only; audited
(account_purged).

` + daemonHelp,
		Example: `  agorctl accounts purge alice --uid 1000
  agorctl accounts purge bob --uid=-1`,
		Args:              exactly(1, "USER"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := account.ValidName(args[0]); err != nil {
				return usageErrorf("%v", err)
			}
			if !cmd.Flags().Changed("uid") {
				return usageErrorf("--uid is required: the uid the data was stored under (agorctl accounts orphans)")
			}
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			got, err := c.PurgeOrphan(ctx, args[0], uid)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "purged %s uid %d: %d sessions, %d tasks, %d events, credentials %s\n",
				got.Name, got.UID, got.Sessions, got.Tasks, got.Events, orDash(strings.Join(got.Credentials, ",")))
			return nil
		},
	}
	addAPIFlags(c, &f)
	c.Flags().Int64Var(&uid, "uid", 0, "the `uid` the data was stored under (-1: not known)")
	return c
}

func nowUID(u *uint32) string {
	if u == nil {
		return "-"
	}
	return strconv.FormatUint(uint64(*u), 10)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
