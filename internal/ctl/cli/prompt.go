package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

type promptOptions struct {
	user, tool, cwd, mode, model, session, sandbox, env string
	limit                                               time.Duration
	jsonOut, detach                                     bool
	cont, toolSet                                       bool // --continue; --tool given
	in                                                  promptInput
}

// promptLong is prompt's help.
var promptLong = `Run one turn of an agent CLI (--tool claude-code, codex, gemini or opencode)
in your executor (or USER's), in this shell's directory, and show its events
as they come: text, tool calls and results, permission questions (asked
here on a terminal, else answer them with agorctl permissions), then a
summary with token usage. --session continues an earlier session (the agent
resumes its own, an interactive one's too: agorctl agent); --continue
takes your last session in this directory. While no event comes for a
while, stderr says so ("waiting for the model: no reply for 10s"), on a
terminal or not.
Interrupted (Ctrl-C), agorctl stops the task; if agorctl is killed or loses
the daemon, the daemon stops the task 30 s later unless someone follows it
(agorctl events --follow TASK). --detach returns at once with the task's
id; the task runs on in the daemon to its end. The words of PROMPT are
joined with spaces; a PROMPT of - alone reads it from stdin, --file from a
file. While it is read, the daemon starts the agent (a pre-warm, with the
gateway on), so the prompt does not wait for the CLI's start; --no-prewarm
does not.

USER or PROMPT: with --user (-u), every operand is the prompt; with --file,
an operand is USER; otherwise, of two operands or more, the first is USER
when it names an account on this host (the older form, agorctl prompt alice
'fix it'), and the prompt's first word when not.

` + whereHelp + `

` + sandboxHelp + `

` + daemonHelp

func newPrompt(a *app) *cobra.Command {
	var f apiFlags
	var o promptOptions
	c := &cobra.Command{
		Use:   "prompt [USER] PROMPT...",
		Short: "run one agent turn here, as you (or USER), and show its events live",
		Long:  promptLong,
		Example: `  cd ~/src/app && agorctl prompt 'explain this repo'
  agorctl prompt --tool codex --mode plan 'add a test for parse'
  agorctl prompt --session 3f2a9c 'now fix it'
  agorctl prompt --continue 'and the docs'
  git diff | agorctl prompt --tool codex -
  agorctl prompt --detach 'run the suite' && agorctl events --follow TASK
  agorctl prompt --sandbox workspace --mode bypassPermissions 'fix the build'
  sudo agorctl prompt -u alice --cwd ~alice/src/app 'why does the build fail?'
  agorctl prompt alice 'explain this repo' --cwd src/app    # the older form`,
		Annotations: map[string]string{"exit": `0 the turn completed; 1 it failed (or the operation did); 2 usage error;
124 timed out (--limit, --timeout); 130 cancelled (agorctl tasks stop) or
interrupted.`},
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			min := 2
			if o.in.file != "" {
				min = 1
			}
			w, words, err := userOperand(cmd.Context(), o.user, args, min)
			if err != nil {
				return err
			}
			if err := notRoot(w, "agorctl prompt -u alice --cwd ~alice/src/app 'fix it'"); err != nil {
				return err
			}
			if o.cont && o.session != "" {
				return usageErrorf("--continue takes your last session here; --session names one: give one of them")
			}
			o.toolSet = cmd.Flags().Changed("tool")
			return runPrompt(cmd.Context(), a, &f, o, w, words)
		},
	}
	promptFlags(c, &f, &o)
	return c
}

// promptFlags adds prompt's flags.
func promptFlags(c *cobra.Command, f *apiFlags, o *promptOptions) {
	addAPIFlags(c, f)
	fs := c.Flags()
	fs.StringVar(&o.tool, "tool", "claude-code", "agentic tool: claude-code, codex, gemini or opencode")
	addUserFlag(c, &o.user)
	fs.StringVar(&o.cwd, "cwd", "", "working `directory` (default: this shell's, in USER's home; see Where above)")
	fs.StringVar(&o.mode, "mode", "default", "permission mode: default, acceptEdits, bypassPermissions or plan")
	fs.StringVar(&o.sandbox, "sandbox", "", "sandbox `level`: off, workspace or read-only (default: the daemon's "+promptLevelKey+")")
	_ = c.RegisterFlagCompletionFunc("sandbox", fixedCompletions("off", "workspace", "read-only"))
	fs.StringVar(&o.model, "model", "", "model (default: the agent's)")
	fs.StringVar(&o.env, "env", "", envFlagUsage)
	fs.StringVar(&o.session, "session", "", "continue this session `ID` (printed by an earlier prompt)")
	fs.BoolVar(&o.cont, "continue", false, "continue your last session in this directory (of --tool, when given)")
	fs.DurationVar(&o.limit, "limit", 0, "stop the agent after this `duration` (0: no limit)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the raw NDJSON stream instead of rendering it")
	addPromptInputFlags(fs, &o.in)
	fs.BoolVar(&o.detach, "detach", false, "start the task and return at once, printing its ids (follow with agorctl events --follow)")
	c.Flags().Lookup("timeout").Usage = "give up after this `duration` (exit 124) with --detach; the live stream is bounded by --limit"
	_ = c.RegisterFlagCompletionFunc("tool", fixedCompletions("claude-code", "codex", "gemini", "opencode"))
	_ = c.RegisterFlagCompletionFunc("mode", fixedCompletions("default", "acceptEdits", "bypassPermissions", "plan"))
	_ = c.RegisterFlagCompletionFunc("session", completeSessions(f))
}

// runPrompt starts the turn and renders it (or, detached, only starts it).
// The stream has no --timeout: the agent's own --limit bounds it.
func runPrompt(ctx context.Context, a *app, f *apiFlags, o promptOptions, w whom, words []string) error {
	user := w.name
	cwd, here, err := workDir(ctx, w, o.cwd)
	if err != nil {
		return err
	}
	if err := workspaceCwd(o.sandbox, cwd, here); err != nil {
		return err
	}
	if o.cont {
		if o.session, o.tool, err = continued(ctx, apiclient.New(f.socket), user, cwd, o.tool, o.toolSet); err != nil {
			return err
		}
	}
	body := apiwire.PromptBody{SessionID: o.session, Tool: o.tool, Prompt: strings.Join(words, " "), Cwd: cwd,
		PermissionMode: o.mode, Model: o.model, TimeoutMS: o.limit.Milliseconds(), Sandbox: o.sandbox, Environment: o.env}
	o.in.noPrewarm = o.in.noPrewarm || o.detach // --detach makes the session first, which pre-warms it
	if err := o.in.read(ctx, a, f, user, words, &body); err != nil {
		return err
	}
	if o.detach {
		c, ctx, cancel := f.client(ctx)
		defer cancel()
		out, err := c.PromptDetached(ctx, user, body)
		if err != nil {
			return homeHint(err, cwd, here)
		}
		fmt.Fprintf(a.stdout, "task %s session %s\n", out.TaskID, out.SessionID)
		fmt.Fprintf(a.stderr, "follow it with: agorctl events --follow %s\n", out.TaskID)
		return nil
	}
	c := apiclient.New(f.socket)
	stream, err := c.Prompt(ctx, user, body)
	if err != nil {
		return homeHint(err, cwd, here)
	}
	defer stream.Close()
	stdin, _ := a.stdin.(*os.File)
	r := &renderer{out: a.stdout, errw: a.stderr, c: c, stdin: stdin, json: o.jsonOut, start: time.Now(), lastSeq: -1}
	err = r.run(ctx, stream)
	if ctx.Err() != nil && r.task != "" {
		r.stopTask() // interrupted: the person no longer wants it
	}
	return err
}
