package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

func newExec(a *app) *cobra.Command {
	var f apiFlags
	var cwd, level, env string
	var limit time.Duration
	c := &cobra.Command{
		Use:   "exec USER -- COMMAND [ARG...]",
		Short: "run a command as USER in their executor",
		Long: `Run COMMAND (no shell) as USER in their executor, in --cwd beneath their
home. Prints its output and exits with its status. Options after "--" belong
to COMMAND.

` + sandboxHelp + `

` + daemonHelp,
		Example: `  agorctl exec alice -- id -un
  agorctl exec --cwd src alice -- git status --short`,
		Annotations: map[string]string{"exit": `COMMAND's own status (128+9 when it was killed); otherwise 1 the operation
failed, 2 usage error, 124 timed out (--timeout), 130 interrupted.`},
		Args:              atLeast(2, "USER -- COMMAND [ARG...]"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 1 {
				return usageErrorf("want USER -- COMMAND: %q before --", args[1:dash])
			}
			if err := workspaceCwd(level, cwd); err != nil {
				return err
			}
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			c.Environment = env
			body := apiwire.ExecBody{Argv: args[1:], Cwd: cwd, TimeoutMS: limit.Milliseconds(), Sandbox: level}
			res, err := c.Exec(ctx, args[0], body, a.stdout, a.stderr) // streamed as it comes
			if err != nil {
				return err
			}
			sandboxWarning(a.stderr, res.Sandbox)
			if res.Signal != "" {
				fmt.Fprintf(a.stderr, "agorctl exec: killed by %s\n", res.Signal)
				return exitWith(128 + 9)
			}
			return exitWith(res.ExitCode)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&cwd, "cwd", ".", "working `directory`, relative to the executor's root (the user's home)")
	c.Flags().DurationVar(&limit, "limit", 0, "the command's own time limit (0: none but --timeout)")
	c.Flags().StringVar(&level, "sandbox", "", "sandbox `level`: off, workspace or read-only (default: the daemon's sandbox.default)")
	c.Flags().StringVar(&env, "env", "", envFlagUsage)
	return c
}

// sandboxHelp says what --sandbox does, for the commands that take it.
const sandboxHelp = `--sandbox confines the process and all it starts with Landlock, enforced by
the kernel: "workspace" lets it write only beneath --cwd, the agent CLI's own
state, a private temp directory and the operator's sandbox.extra_writable
(reads as before); "read-only" only the state and temp; "off" as the user
may. The levels a request may ask for, the default, and what a kernel
without Landlock means (refuse, or run unconfined with a warning) are the
operator's (sandbox in /etc/agor/config.yaml). With a prompt, the sandbox
holds whatever the permission mode approves, bypassPermissions included:
the agent runs its tools without asking, but they still cannot write
outside the workspace.`

// workspaceCwd refuses --sandbox workspace without a project: with the
// default --cwd (the home directory) everything of the user's would be
// writable. The daemon and the executor refuse it too; this says so
// before anything is sent.
func workspaceCwd(level, cwd string) error {
	if level == string(sandbox.Workspace) && sandbox.PlainHome(cwd) {
		return usageErrorf("--sandbox workspace needs a project directory: name it with --cwd (the workspace would be your whole home)")
	}
	return nil
}

// sandboxWarning says, where a person sees it, that a sandbox level asked
// for was not enforced (the kernel has no Landlock and the configuration
// lets such work run unconfined).
func sandboxWarning(w io.Writer, got *protocol.SandboxInfo) {
	if got == nil {
		return
	}
	if !got.Enforced && got.Warning != "" {
		fmt.Fprintf(w, "warning: sandbox %s not enforced: %s\n", got.Level, got.Warning)
	}
	for _, u := range got.Undone {
		if strings.Contains(u, ": ") { // "PATH: why (disabled: ...)", the guard's sweep
			fmt.Fprintf(w, "warning: disabled what the confined command left that would run later outside the sandbox: %s\n", u)
			continue
		}
		fmt.Fprintf(w, "warning: undid the confined command's change to .git/%s: git would have run it outside the sandbox\n", u)
	}
}
