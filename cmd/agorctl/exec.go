package main

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/apiwire"
)

func newExec(a *app) *cobra.Command {
	var f apiFlags
	var cwd string
	var limit time.Duration
	c := &cobra.Command{
		Use:   "exec USER -- COMMAND [ARG...]",
		Short: "run a command as USER in their executor",
		Long: `Run COMMAND (no shell) as USER in their executor, in --cwd beneath their
home. Prints its output and exits with its status. Options after "--" belong
to COMMAND.

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
			c, ctx, cancel := f.client(cmd.Context())
			defer cancel()
			body := apiwire.ExecBody{Argv: args[1:], Cwd: cwd, TimeoutMS: limit.Milliseconds()}
			var res apiwire.ExecReply
			if err := c.Do(ctx, "POST", "/v1/executors/"+url.PathEscape(args[0])+"/exec", body, &res); err != nil {
				return err
			}
			io.WriteString(a.stdout, res.Stdout)
			io.WriteString(a.stderr, res.Stderr)
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
	return c
}
