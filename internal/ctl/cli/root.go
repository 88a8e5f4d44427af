package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/version"
)

// app is what every command shares: where it reads and writes.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// exitStatusHelp is the exit statuses, in every command's help and the
// man page.
const exitStatusHelp = `0 success; 1 the operation failed (refused, not found, the daemon unreachable);
2 usage error (unknown command or flag, missing argument); 124 timed out
(--timeout); 130 interrupted (SIGINT, SIGTERM).`

// daemonHelp is said of every command that goes through the daemon.
const daemonHelp = `Through agor-daemon's API socket (--api, default /run/agor/daemon.sock,
environment AGOR_SOCKET). The daemon knows you by your Unix account: you
act as yourself; root and members of api.admin_group act for anyone.`

const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} COMMAND{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Commands:{{range $cmds}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

Exit status:
{{exitStatus . | indent}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} COMMAND --help" for more about a command.{{end}}
`

func init() {
	cobra.AddTemplateFunc("exitStatus", exitStatusOf)
	cobra.AddTemplateFunc("indent", func(s string) string {
		return "  " + strings.ReplaceAll(s, "\n", "\n  ")
	})
}

// exitStatusOf is a command's exit statuses: its "exit" annotation, or
// the common ones.
func exitStatusOf(c *cobra.Command) string {
	if s, ok := c.Annotations["exit"]; ok {
		return s
	}
	return exitStatusHelp
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agorctl",
		Short: "command line for agor, the per-user AI agent and terminal service",
		Long: `agorctl drives agor: per-user AI coding agents (Claude Code, Codex, Gemini,
OpenCode) and terminals that run as each person's own Unix account on a
shared host, started by systemd on demand.

Most commands go through agor-daemon's API socket. "executors ensure",
"executors ping" and --no-daemon reach executors straight over their sockets
and systemd's D-Bus API, as the daemon does. --help (or -h) anywhere prints
help and does nothing else; "agorctl help COMMAND" too.`,
		Example: `  agorctl executors start
  agorctl exec -- id -un
  cd ~/src/app && agorctl prompt 'explain this repo'
  sudo agorctl prompt -u alice --cwd ~alice/src/app 'explain this repo'
  printf '%s\n' "$KEY" | agorctl creds set ANTHROPIC_API_KEY
  agorctl doctor`,
		Version:       version.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return exitWith(exitUsage)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetUsageTemplate(usageTemplate)
	root.SetVersionTemplate("agorctl {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitUsage, err: err} })
	root.AddGroup(&cobra.Group{ID: "daemon", Title: "Through the daemon:"},
		&cobra.Group{ID: "direct", Title: "Installation and this tool:"})
	root.AddCommand(
		newExecutors(a), newExec(a), newPrompt(a), newAgent(a), newSessions(a), newTasks(a), newEvents(a),
		newTerminal(a), newFiles(a), newCreds(a), newPermissions(a), newAudit(a), newUsage(a), newAccounts(a),
		newDoctor(a), newNetwork(a), newEnvironments(a), newDisabled(a), newAPIToken(a), newCompletion(a), newVersion(a),
		newLegacyExecutor(a), newLegacyStop(a), newMan(a),
	)
	for _, c := range root.Commands() {
		switch {
		case c.Hidden:
		case c.Name() != "doctor" && usesDaemon(c):
			c.GroupID = "daemon"
		default:
			c.GroupID = "direct"
		}
	}
	root.InitDefaultHelpCmd()
	help, _, _ := root.Find([]string{"help"})
	help.Short = "print the help of a command"
	help.Long = "Print the help of any command, as COMMAND --help does."
	help.Example = "  agorctl help executors start"
	help.GroupID = "direct"
	return root
}

// usesDaemon reports whether c or a command below it has --api.
func usesDaemon(c *cobra.Command) bool {
	if c.Flags().Lookup("api") != nil {
		return true
	}
	for _, s := range c.Commands() {
		if usesDaemon(s) {
			return true
		}
	}
	return false
}

// group makes c a command family: it runs def when given no subcommand
// (nil: a usage error naming the subcommands), and an unknown
// subcommand is a usage error, not help.
func group(c *cobra.Command, def func(*cobra.Command, []string) error) *cobra.Command {
	if def == nil {
		def = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return usageErrorf("name a command: %s", strings.Join(subcommandNames(cmd), ", "))
		}
		c.Args = cobra.ArbitraryArgs
		c.Annotations = map[string]string{"family": "only"} // runs only its subcommands
	}
	c.RunE = def
	return c
}

func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return names
}

func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	if names := subcommandNames(c); len(names) > 0 {
		msg += "; commands: " + strings.Join(names, ", ")
	}
	return usageErrorf("%s", msg)
}

// noOperands refuses operands: a word there is an unknown command.
func noOperands(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return unknownCommand(cmd, args[0])
	}
	return nil
}

// exactly wants n operands, named in the usage error.
func exactly(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("want %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
}

// atLeast wants n or more operands.
func atLeast(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("want %s", names)
		}
		return nil
	}
}

// apiFlags are the flags of every command that goes through the daemon.
type apiFlags struct {
	socket  string
	timeout time.Duration
}

func addAPIFlags(c *cobra.Command, f *apiFlags) {
	c.Flags().StringVar(&f.socket, "api", apiclient.Socket(), "the daemon's API socket `path` (environment AGOR_SOCKET)")
	c.Flags().DurationVar(&f.timeout, "timeout", 60*time.Second, "give up after this `duration` (exit 124)")
}

// client returns the daemon's client and ctx bounded by --timeout.
func (f *apiFlags) client(ctx context.Context) (*apiclient.Client, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	return apiclient.New(f.socket), ctx, cancel
}

func newVersion(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "print agorctl's version",
		Long:    "Print agorctl's version, as stamped at build time (git describe).",
		Example: "  agorctl version",
		Args:    noOperands,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(a.stdout, "agorctl", version.Version)
			return nil
		},
	}
}
