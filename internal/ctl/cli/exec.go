package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func newExec(a *app) *cobra.Command {
	var f apiFlags
	var user, cwd, level, env string
	var limit time.Duration
	c := &cobra.Command{
		Use:   "exec [USER] -- COMMAND [ARG...]",
		Short: "run a command here, in your executor (or USER's)",
		Long: `Run COMMAND (no shell) in your executor (or USER's), in this shell's
directory. Prints its output and exits with its status. Options after "--"
belong to COMMAND.

USER or COMMAND: with --user (-u), every operand is COMMAND's; an operand
before "--" is USER; with no "--", of two operands or more, the first is
USER when it names an account on this host (the older form, agorctl exec
alice -- id), and COMMAND when not.

` + whereHelp + `

` + sandboxHelp + `

` + daemonHelp,
		Example: `  agorctl exec -- id -un
  cd ~/src/app && agorctl exec -- git status --short
  sudo agorctl exec -u alice --cwd ~alice/src/app -- git log -1
  agorctl exec alice -- id -un    # the older form`,
		Annotations: map[string]string{"exit": `COMMAND's own status (128+9 when it was killed); otherwise 1 the operation
failed, 2 usage error, 124 timed out (--timeout), 130 interrupted.`},
		Args:              atLeast(1, "[USER] -- COMMAND [ARG...]"),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, argv, err := execOperands(cmd.Context(), user, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return runExec(cmd.Context(), a, &f, w, apiwire.ExecBody{Argv: argv, Cwd: cwd, TimeoutMS: limit.Milliseconds(), Sandbox: level}, env)
		},
	}
	addAPIFlags(c, &f)
	addUserFlag(c, &user)
	c.Flags().StringVar(&cwd, "cwd", "", "working `directory` (default: this shell's, in USER's home; see Where above)")
	c.Flags().DurationVar(&limit, "limit", 0, "the command's own time limit (0: none but --timeout)")
	c.Flags().StringVar(&level, "sandbox", "", "sandbox `level`: off, workspace or read-only (default: the daemon's "+workLevelKey+")")
	c.Flags().StringVar(&env, "env", "", envFlagUsage)
	return c
}

// execOperands splits exec's operands into USER and COMMAND (dash: the
// number of operands before "--", -1 without one).
func execOperands(ctx context.Context, user string, args []string, dash int) (whom, []string, error) {
	switch {
	case user != "" && dash > 0:
		return whom{}, nil, usageErrorf("want -- COMMAND with --user: %q before --", args[:dash])
	case dash > 1:
		return whom{}, nil, usageErrorf("want [USER] -- COMMAND: %q before --", args[:dash])
	case dash == 1:
		user, args = args[0], args[1:]
	}
	var w whom
	var err error
	if dash == 0 && user == "" { // "--" first: every operand is COMMAND
		w, err = self(ctx)
	} else {
		w, args, err = userOperand(ctx, user, args, 2)
	}
	switch {
	case err != nil:
		return whom{}, nil, err
	case len(args) == 0:
		return whom{}, nil, usageErrorf("want [USER] -- COMMAND [ARG...]: no COMMAND")
	}
	return w, args, notRoot(w, "agorctl exec -u alice --cwd ~alice/src/app -- make")
}

func runExec(ctx context.Context, a *app, f *apiFlags, w whom, body apiwire.ExecBody, env string) error {
	cwd, here, err := workDir(ctx, w, body.Cwd)
	if err != nil {
		return err
	}
	if err := workspaceCwd(body.Sandbox, cwd, here); err != nil {
		return err
	}
	body.Cwd = cwd
	c, ctx, cancel := f.client(ctx)
	defer cancel()
	c.Environment = env
	res, err := c.Exec(ctx, w.name, body, a.stdout, a.stderr) // streamed as it comes
	if err != nil {
		return homeHint(err, cwd, here)
	}
	sandboxWarning(a.stderr, res.Sandbox)
	if res.Signal != "" {
		fmt.Fprintf(a.stderr, "agorctl exec: killed by %s\n", res.Signal)
		return exitWith(128 + 9)
	}
	return exitWith(res.ExitCode)
}
