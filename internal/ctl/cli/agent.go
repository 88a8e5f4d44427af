package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

type agentOptions struct {
	user, tool, cwd, mode, model, session, sandbox, env string
	cont                                                bool
}

// agentLong is agent's help.
var agentLong = `Open an agent CLI's own interactive terminal UI (--tool claude-code, codex,
gemini or opencode) as you (or USER), in your executor, in this shell's
directory, and attach this terminal to it, as agorctl terminal does: raw
mode, the window size followed. Its model requests go through the
daemon's model gateway: the organisation's key is put on there (your
processes hold a placeholder), every token is counted to you and your
budget holds. It is a session like a prompt's: agorctl sessions lists it,
agorctl prompt --session ID continues it headless (the agent resumes what
was said in its UI), and agorctl agent --session ID opens it again.
--continue takes your last session in this directory. PROMPT, when given,
is the UI's first message.

Ctrl-] detaches and leaves the agent running, for 5 minutes unattached
like a terminal; agorctl terminal --attach ID (from any shell, or the
page's terminal view) comes back to it with its recent output. The
session's task ends when the UI exits (completed when it exited 0).

` + whereHelp + `

` + sandboxHelp + `

` + daemonHelp

func newAgent(a *app) *cobra.Command {
	var f apiFlags
	var o agentOptions
	c := &cobra.Command{
		Use:   "agent [PROMPT...]",
		Short: "open an agent CLI's own UI here, as you, as a session",
		Long:  agentLong,
		Example: `  cd ~/src/app && agorctl agent
  agorctl agent --tool codex 'add a test for parse'
  agorctl agent --continue
  agorctl agent --session 3f2a9c
  agorctl terminal --attach term_7c2e          # after Ctrl-], from any shell
  agorctl prompt --session 3f2a9c 'now run the tests'
  sudo agorctl agent -u alice --cwd ~alice/src/app`,
		Annotations: map[string]string{"exit": `the UI's own status (0 on detach); otherwise 1 the operation failed, 2
usage error, 130 interrupted.`},
		RunE: func(cmd *cobra.Command, args []string) error {
			w, _, err := userOperand(cmd.Context(), o.user, nil, 1)
			if err != nil {
				return err
			}
			if err := notRoot(w, "agorctl agent -u alice --cwd ~alice/src/app"); err != nil {
				return err
			}
			if o.cont && o.session != "" {
				return usageErrorf("--continue takes your last session here; --session names one: give one of them")
			}
			stdin, _ := a.stdin.(*os.File)
			if stdin == nil || !term.IsTerminal(int(stdin.Fd())) {
				return errors.New("standard input is not a terminal: run it from one (ssh -t, a terminal window); agorctl prompt runs a turn without one")
			}
			return runAgent(cmd.Context(), a, &f, o, w, stdin, strings.Join(args, " "), cmd.Flags().Changed("tool"))
		},
	}
	agentFlags(c, &f, &o)
	_ = c.Flags().MarkHidden("timeout") // the session lasts as long as its UI
	return c
}

func agentFlags(c *cobra.Command, f *apiFlags, o *agentOptions) {
	addAPIFlags(c, f)
	addUserFlag(c, &o.user)
	fs := c.Flags()
	fs.StringVar(&o.tool, "tool", "claude-code", "agentic tool: claude-code, codex, gemini or opencode (with --continue: the last session's, unless given)")
	fs.StringVar(&o.cwd, "cwd", "", "working `directory` (default: this shell's, in USER's home; see Where above)")
	fs.StringVar(&o.mode, "mode", "default", "permission mode: default, acceptEdits, bypassPermissions or plan")
	fs.StringVar(&o.sandbox, "sandbox", "", "sandbox `level`: off, workspace or read-only (default: the daemon's "+promptLevelKey+")")
	fs.StringVar(&o.model, "model", "", "model (default: the agent's)")
	fs.StringVar(&o.env, "env", "", envFlagUsage)
	fs.StringVar(&o.session, "session", "", "open this session `ID` again (printed when one ends)")
	fs.BoolVar(&o.cont, "continue", false, "open your last session in this directory again")
	_ = c.RegisterFlagCompletionFunc("tool", fixedCompletions("claude-code", "codex", "gemini", "opencode"))
	_ = c.RegisterFlagCompletionFunc("mode", fixedCompletions("default", "acceptEdits", "bypassPermissions", "plan"))
	_ = c.RegisterFlagCompletionFunc("sandbox", fixedCompletions("off", "workspace", "read-only"))
	_ = c.RegisterFlagCompletionFunc("session", completeSessions(f))
}

// runAgent starts the interactive task, attaches to its terminal once it
// runs there, and says how it ended.
func runAgent(ctx context.Context, a *app, f *apiFlags, o agentOptions, w whom, stdin *os.File, prompt string, toolSet bool) error {
	cwd, here, err := workDir(ctx, w, o.cwd)
	if err == nil {
		err = workspaceCwd(o.sandbox, cwd, here)
	}
	if err != nil {
		return err
	}
	c := apiclient.New(f.socket)
	if o.cont {
		if o.session, o.tool, err = continued(ctx, c, w.name, cwd, o.tool, toolSet); err != nil {
			return err
		}
	}
	cols, rows := termSize(stdin)
	body := apiwire.PromptBody{SessionID: o.session, Tool: o.tool, Prompt: prompt, Cwd: cwd, PermissionMode: o.mode,
		Model: o.model, Sandbox: o.sandbox, Environment: o.env, Interactive: &protocol.Interactive{Cols: cols, Rows: rows}}
	stream, err := c.Prompt(ctx, w.name, body)
	if err != nil {
		return homeHint(err, cwd, here)
	}
	defer stream.Close()
	as := &agentStream{stream: stream, errw: a.stderr}
	id, err := as.terminal()
	if err != nil {
		return err
	}
	c.Environment = o.env
	t, err := c.AttachTerminal(ctx, w.name, id)
	if err != nil {
		return fmt.Errorf("attach to the agent's terminal %s: %w", id, err)
	}
	s := &session{t: t, stdout: a.stdout, stderr: a.stderr, id: id, user: w.name, c: c, ctx: ctx}
	code := s.run(stdin, cols, rows)
	s.term().Close()
	if s.detached {
		fmt.Fprintf(a.stderr, "[agorctl: the agent runs on in session %s]\r\n", as.session)
		return nil
	}
	as.ended(a.stderr)
	return exitWith(code)
}

// continued is cwd's last session of user's (of tool, when toolSet), and
// its tool.
func continued(ctx context.Context, c *apiclient.Client, user, cwd, tool string, toolSet bool) (string, string, error) {
	list, _, err := c.Sessions(ctx, user)
	if err != nil {
		return "", "", err
	}
	want := ""
	if toolSet {
		want = tool
	}
	s, ok := lastSession(list.Sessions, user, cwd, want)
	if !ok {
		return "", "", fmt.Errorf("no session of %s in ~/%s to continue: start one with agorctl agent (or agorctl prompt)", user, cwd)
	}
	return s.ID, s.AgenticTool, nil
}

// lastSession is user's most recently updated session in cwd (of tool,
// unless tool is ""); the later created wins a tie.
func lastSession(all []apiwire.SessionView, user, cwd, tool string) (apiwire.SessionView, bool) {
	var best apiwire.SessionView
	found := false
	for _, s := range all {
		if s.UnixUser != user || s.Cwd != cwd || (tool != "" && s.AgenticTool != tool) {
			continue
		}
		newer := s.UpdatedAt.After(best.UpdatedAt) || (s.UpdatedAt.Equal(best.UpdatedAt) && s.CreatedAt.After(best.CreatedAt))
		if !found || newer {
			best, found = s, true
		}
	}
	return best, found
}
