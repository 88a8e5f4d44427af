package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
)

func newSessions(a *app) *cobra.Command {
	var f apiFlags
	var user string
	var asJSON bool
	c := &cobra.Command{
		Use:   "sessions",
		Short: "list agent sessions",
		Long: `List agent sessions: yours; admins see everyone's, or --user's. A table of
SESSION USER TOOL CWD STATUS UPDATED, or the daemon's JSON with --json.
"agorctl sessions list" is the same.

` + daemonHelp,
		Example: `  agorctl sessions
  agorctl sessions --user alice --json`,
		Args: noOperands,
	}
	list := func(cmd *cobra.Command, _ []string) error {
		c, ctx, cancel := f.client(cmd.Context())
		defer cancel()
		out, raw, err := c.Sessions(ctx, user)
		if err != nil {
			return err
		}
		if asJSON {
			fmt.Fprintln(a.stdout, string(raw))
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tUSER\tTOOL\tCWD\tSTATUS\tUPDATED")
		for _, s := range out.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.UnixUser, s.AgenticTool, s.Cwd, s.Status, s.UpdatedAt.Local().Format(time.DateTime))
		}
		return tw.Flush()
	}
	flags := func(c *cobra.Command) {
		addAPIFlags(c, &f)
		c.Flags().StringVar(&user, "user", "", "only this user's sessions (admins; others see their own)")
		c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON")
		_ = c.RegisterFlagCompletionFunc("user", completeUsers(&f))
	}
	flags(c)
	group(c, list)
	sub := &cobra.Command{Use: "list", Short: "list agent sessions", Long: c.Long, Example: "  agorctl sessions list", Args: noOperands, RunE: list}
	flags(sub)
	c.AddCommand(sub)
	return c
}

func newTasks(a *app) *cobra.Command {
	var f apiFlags
	var asJSON bool
	list := func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf("want SESSION, got %d argument(s)", len(args))
		}
		c, ctx, cancel := f.client(cmd.Context())
		defer cancel()
		out, raw, err := c.Tasks(ctx, args[0])
		if err != nil {
			return err
		}
		if asJSON {
			fmt.Fprintln(a.stdout, string(raw))
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tSTATUS\tCREATED\tPROMPT")
		for _, t := range out.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Status, t.CreatedAt.Local().Format(time.DateTime), clip(t.Prompt, 60))
		}
		return tw.Flush()
	}
	long := `List a session's tasks with their status: a table of TASK STATUS CREATED
PROMPT, or the daemon's JSON with --json. "agorctl tasks SESSION" is
"agorctl tasks list SESSION"; "agorctl tasks stop TASK" stops one.

` + daemonHelp
	flags := func(c *cobra.Command) {
		addAPIFlags(c, &f)
		c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON")
	}
	c := &cobra.Command{
		Use:   "tasks SESSION",
		Short: "list a session's tasks; stop one",
		Long:  long,
		Example: `  agorctl tasks 3f2a9c
  agorctl tasks list 3f2a9c --json
  agorctl tasks stop 8b1e44`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeSessions(&f),
		RunE:              list,
	}
	flags(c)
	sub := &cobra.Command{
		Use: "list SESSION", Short: "list a session's tasks", Long: long,
		Example: "  agorctl tasks list 3f2a9c", Args: exactly(1, "SESSION"),
		ValidArgsFunction: completeSessions(&f), RunE: list,
	}
	flags(sub)
	c.AddCommand(sub, newTasksStop(a, "stop TASK"))
	return c
}

func newTasksStop(a *app, use string) *cobra.Command {
	var f apiFlags
	c := &cobra.Command{
		Use:   use,
		Short: "stop a running task",
		Long: `Stop a running task: its agent is killed and its status becomes cancelled.
Prints the daemon's reply ({"stopped":true}, or the status of a task that
had already ended).

` + daemonHelp,
		Example:           "  agorctl tasks stop 8b1e44",
		Args:              exactly(1, "TASK"),
		ValidArgsFunction: completeTasks(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			_, raw, err := c.StopTask(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, string(raw))
			return nil
		},
	}
	addAPIFlags(c, &f)
	return c
}

// newLegacyStop is the old "agorctl stop TASK" (README, the 0.1 man
// page): hidden, now "agorctl tasks stop TASK".
func newLegacyStop(a *app) *cobra.Command {
	c := newTasksStop(a, "stop TASK")
	c.Hidden = true
	c.Short = "old spelling of tasks stop"
	return c
}

func newEvents(a *app) *cobra.Command {
	var f apiFlags
	var follow bool
	var after int64
	c := &cobra.Command{
		Use:   "events TASK",
		Short: "print a task's events as JSON lines; --follow for new ones",
		Long: `Print a task's stored events, one JSON object a line. With --follow, keep
printing new ones until the task ends, resuming after the last one printed if
the connection drops, so none is lost or repeated.

` + daemonHelp,
		Example: `  agorctl events 8b1e44
  agorctl events --follow 8b1e44
  agorctl events --after 41 8b1e44 | jq .event_type`,
		Args:              exactly(1, "TASK"),
		ValidArgsFunction: completeTasks(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c := apiclient.New(f.socket)
			if !follow {
				var cancel func()
				c, ctx, cancel = f.client(ctx)
				defer cancel()
			}
			o := apiclient.EventsOptions{After: after, Follow: follow, Resumed: func(err error, after int64) {
				fmt.Fprintf(a.stderr, "agorctl events: %v; resuming after %d\n", err, after)
			}}
			return c.Events(ctx, args[0], o, a.stdout)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().Lookup("timeout").Usage = "give up after this `duration` (exit 124); not with --follow"
	c.Flags().BoolVar(&follow, "follow", false, "keep printing new events until the task ends")
	c.Flags().Int64Var(&after, "after", -1, "start after this sequence `number`")
	return c
}

func newPermissions(a *app) *cobra.Command {
	var f apiFlags
	var asJSON bool
	list := func(cmd *cobra.Command, _ []string) error {
		c, ctx, cancel := f.client(cmd.Context())
		defer cancel()
		out, err := c.Permissions(ctx)
		if err != nil {
			return err
		}
		return printLines(a, out.Permissions)
	}
	long := `List agents' open permission requests (one JSON object a line: id, task,
user, tool and its input), and approve or deny one by id. Users see and
answer their own agents' requests; admins anyone's.

` + daemonHelp
	flags := func(c *cobra.Command) {
		addAPIFlags(c, &f)
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON lines (the output is JSON lines already)")
	}
	c := &cobra.Command{
		Use:   "permissions",
		Short: "list agents' open permission requests; approve or deny one",
		Long:  long + "\n\nWith no command, lists them (as permissions list).",
		Example: `  agorctl permissions
  agorctl permissions approve perm_5c1d
  agorctl permissions deny perm_5c1d --reason 'not on main'`,
		Args: noOperands,
	}
	flags(c)
	group(c, list)
	sub := &cobra.Command{Use: "list", Short: "list open permission requests", Long: long,
		Example: "  agorctl permissions list", Args: noOperands, RunE: list}
	flags(sub)
	c.AddCommand(sub, newDecide(a, true), newDecide(a, false))
	return c
}

// newDecide is permissions approve (yes) or deny.
func newDecide(a *app, yes bool) *cobra.Command {
	var f apiFlags
	var reason string
	verb := map[bool]string{true: "approve", false: "deny"}[yes]
	c := &cobra.Command{
		Use:   verb + " ID",
		Short: verb + " an agent's permission request",
		Long: fmt.Sprintf(`%s the permission request ID (from agorctl permissions); --reason is
told to the agent.

`, map[bool]string{true: "Approve", false: "Deny"}[yes]) + daemonHelp,
		Example:           fmt.Sprintf("  agorctl permissions %s perm_5c1d --reason 'reviewed'", verb),
		Args:              exactly(1, "ID"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			return c.DecidePermission(ctx, args[0], yes, reason)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&reason, "reason", "", "why, told to the agent")
	return c
}

func newAudit(a *app) *cobra.Command {
	var f apiFlags
	var user, action, task string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "audit",
		Short: "print the audit trail as JSON lines",
		Long: `Print the audit trail, one JSON record a line: executors started and
stopped, keys handed out (never their values), permission decisions,
throttling. Users see their own records; admins everyone's.

` + daemonHelp,
		Example: `  agorctl audit --action api_key_issued
  agorctl audit --user alice --limit 0`,
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			out, err := c.Audit(ctx, apiclient.AuditQuery{User: user, Action: action, Task: task, Limit: limit})
			if err != nil {
				return err
			}
			return printLines(a, out.Records)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&user, "user", "", "only this user's records (admins; others see only their own)")
	c.Flags().StringVar(&action, "action", "", "only this action, e.g. api_key_issued, rate_limited")
	c.Flags().StringVar(&task, "task", "", "only this task")
	c.Flags().IntVar(&limit, "limit", 100, "the newest N records (0: all kept)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON lines (the output is JSON lines already)")
	_ = c.RegisterFlagCompletionFunc("user", completeUsers(&f))
	_ = c.RegisterFlagCompletionFunc("task", completeTasks(&f))
	return c
}

// clip shortens s to n bytes and an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// printLines prints each of list as one JSON object a line.
func printLines[T any](a *app, list []T) error {
	for _, v := range list {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(b))
	}
	return nil
}
