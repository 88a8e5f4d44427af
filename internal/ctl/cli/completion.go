package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// completionTimeout bounds a completion's question to the daemon: a
// shell waiting on Tab must not hang when the daemon does.
const completionTimeout = 2 * time.Second

func newCompletion(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "completion",
		Short: "print a shell completion script: bash, zsh or fish",
		Long: `Print a completion script for bash, zsh or fish. The packages install them
(bash: /usr/share/bash-completion/completions/agorctl, zsh:
/usr/share/zsh/vendor-completions/_agorctl on Debian and
/usr/share/zsh/site-functions/_agorctl on Fedora, fish:
/usr/share/fish/vendor_completions.d/agorctl.fish). Besides commands and
flags, they complete user names (agorctl executors list), session and task
ids, asked of the daemon; when it does not answer, they offer nothing.`,
		Example: `  source <(agorctl completion bash)
  agorctl completion zsh >"${fpath[1]}/_agorctl"
  agorctl completion fish | source`,
	}
	group(c, nil)
	for _, sh := range []struct {
		name, example string
		gen           func(*cobra.Command) error
	}{
		{"bash", "  source <(agorctl completion bash)", func(root *cobra.Command) error { return root.GenBashCompletionV2(a.stdout, true) }},
		{"zsh", "  agorctl completion zsh >~/.zfunc/_agorctl", func(root *cobra.Command) error { return root.GenZshCompletion(a.stdout) }},
		{"fish", "  agorctl completion fish >~/.config/fish/completions/agorctl.fish", func(root *cobra.Command) error { return root.GenFishCompletion(a.stdout, true) }},
	} {
		c.AddCommand(&cobra.Command{
			Use:               sh.name,
			Short:             "print the " + sh.name + " completion script",
			Long:              fmt.Sprintf("Print agorctl's completion script for %s on standard output.", sh.name),
			Example:           sh.example,
			Args:              noOperands,
			ValidArgsFunction: cobra.NoFileCompletions,
			RunE:              func(cmd *cobra.Command, _ []string) error { return sh.gen(cmd.Root()) },
		})
	}
	return c
}

// completer answers a completion from the daemon, or not at all.
type completer func(ctx context.Context, c *apiclient.Client) []string

// fromDaemon makes a completion function of ask, asked for the first
// operand or (anyOperand) every one; silently empty when the daemon does
// not answer.
func fromDaemon(f *apiFlags, anyOperand bool, ask completer) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && !anyOperand {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		socket := apiclient.Socket()
		if f != nil && f.socket != "" {
			socket = f.socket
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		return ask(ctx, apiclient.New(socket)), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeUsers completes user names, for every operand, from the
// daemon's executors list: everyone's for an admin, her own name for a
// person (GET /v1/executors lists a person her own executor).
func completeUsers(f *apiFlags) cobra.CompletionFunc { return fromDaemon(f, true, askUsers) }

// completeUser completes the first operand only with a user name.
func completeUser(f *apiFlags) cobra.CompletionFunc { return fromDaemon(f, false, askUsers) }

func askUsers(ctx context.Context, c *apiclient.Client) []string {
	out, _, err := c.Executors(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(out.Executors))
	for _, e := range out.Executors {
		names = append(names, e.User)
	}
	return names
}

// completeSessions completes session ids, each with its user, tool and
// directory as the description.
func completeSessions(f *apiFlags) cobra.CompletionFunc {
	return fromDaemon(f, false, func(ctx context.Context, c *apiclient.Client) []string {
		var out []string
		for _, s := range sessions(ctx, c) {
			out = append(out, s.ID+"\t"+s.UnixUser+" "+s.AgenticTool+" "+s.Cwd)
		}
		return out
	})
}

// completeTasks completes the task ids of the most recently updated
// sessions, each with its status and prompt as the description.
func completeTasks(f *apiFlags) cobra.CompletionFunc {
	return fromDaemon(f, false, func(ctx context.Context, c *apiclient.Client) []string {
		var out []string
		ss := sessions(ctx, c)
		for i := len(ss) - 1; i >= 0 && i >= len(ss)-5; i-- {
			tl, _, err := c.Tasks(ctx, ss[i].ID)
			if err != nil {
				break
			}
			for _, t := range tl.Tasks {
				out = append(out, t.ID+"\t"+t.Status+" "+clip(t.Prompt, 40))
			}
		}
		return out
	})
}

func sessions(ctx context.Context, c *apiclient.Client) []apiwire.SessionView {
	sl, _, err := c.Sessions(ctx, "")
	if err != nil {
		return nil
	}
	return sl.Sessions
}

// fixedCompletions completes a flag's value from a fixed list.
func fixedCompletions(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
