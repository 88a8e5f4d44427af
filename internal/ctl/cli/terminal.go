package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// DetachKey (Ctrl-]) leaves the terminal running and returns to the
// local shell, as telnet's escape does.
const DetachKey = 0x1d

func newTerminal(a *app) *cobra.Command {
	var f apiFlags
	var p protocol.SpawnTerminalParams
	var user, attachID, env string
	var noTTY bool
	c := &cobra.Command{
		Use:   "terminal [USER]",
		Short: "open a shell here, as you (or USER), on this terminal",
		Long: `Open a shell as you (or USER) on a terminal in the executor, in this shell's
directory, and attach this terminal to it, in raw mode; the window size
follows yours (SIGWINCH). Ctrl-] detaches and leaves the shell running (for
5 minutes unattached); --attach ID comes back to it with its recent output,
taking it over from wherever it is attached (the client there stops,
saying so, and the shell runs on). Standard input must be a terminal;
--no-tty runs the shell on pipes instead (its input from standard input,
its output to standard output), for scripts.

` + whereHelp + `

` + sandboxHelp + `

` + daemonHelp,
		Example: `  agorctl terminal
  agorctl terminal --cwd ~/src
  sudo agorctl terminal -u alice
  agorctl terminal --attach term_7c2e`,
		Annotations: map[string]string{"exit": `the shell's own status (128+N when signal N ended it; 0 on detach,
or when attached elsewhere);
otherwise 1 the operation failed, 2 usage error, 130 interrupted.`},
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := terminalUser(cmd.Context(), user, args)
			if err != nil {
				return err
			}
			if attachID == "" {
				if p.Cwd, err = terminalCwd(cmd.Context(), w, p); err != nil {
					return err
				}
			}
			stdin, _ := a.stdin.(*os.File)
			if !noTTY && (stdin == nil || !term.IsTerminal(int(stdin.Fd()))) {
				return errors.New("standard input is not a terminal: run it from one (ssh -t, a terminal window), or pass --no-tty to drive the shell through pipes")
			}
			client := apiclient.New(f.socket)
			client.Environment = env
			return runTerminal(cmd.Context(), a, client, stdin, w.name, p, attachID)
		},
	}
	addAPIFlags(c, &f)
	addUserFlag(c, &user)
	c.Flags().StringVar(&p.Cwd, "cwd", "", "working `directory` (default: this shell's, in USER's home; see Where above)")
	c.Flags().StringVar(&p.Shell, "shell", "", "`program` to run (default: the user's login shell)")
	c.Flags().StringVar(&p.Sandbox, "sandbox", "", "sandbox `level` of the shell: off, workspace or read-only (default: the daemon's "+workLevelKey+")")
	c.Flags().StringVar(&attachID, "attach", "", "reattach to the running terminal `ID` instead of starting one")
	c.Flags().StringVar(&env, "env", "", envFlagUsage+"; with --attach, the one the terminal was started in")
	c.Flags().BoolVar(&noTTY, "no-tty", false, "run without a terminal on standard input: keys from standard input as they come, output to standard output")
	return c
}

// terminalCwd is the new terminal's working directory, as whereHelp says.
func terminalCwd(ctx context.Context, w whom, p protocol.SpawnTerminalParams) (string, error) {
	cwd, here, err := workDir(ctx, w, p.Cwd)
	if err != nil {
		return "", err
	}
	return cwd, workspaceCwd(p.Sandbox, cwd, here)
}

func runTerminal(ctx context.Context, a *app, c *apiclient.Client, stdin *os.File, name string, p protocol.SpawnTerminalParams, id string) error {
	p.Cols, p.Rows = termSize(stdin)
	if id == "" {
		res, err := c.SpawnTerminal(ctx, name, p)
		if err != nil {
			return err
		}
		id = res.TerminalID
		sandboxWarning(a.stderr, res.Sandbox)
	}
	t, err := c.AttachTerminal(ctx, name, id)
	if err != nil {
		return err
	}
	defer t.Close()
	s := &session{t: t, stdout: a.stdout, stderr: a.stderr, id: id, user: name, c: c, ctx: ctx}
	defer func() { s.term().Close() }()
	return exitWith(s.run(stdin, p.Cols, p.Rows))
}

// terminalUser is --user, or the operand, or the caller.
func terminalUser(ctx context.Context, user string, args []string) (whom, error) {
	switch {
	case user != "" && len(args) == 1:
		return whom{}, usageErrorf("name the account once: --user %s or %s", user, args[0])
	case len(args) == 1:
		user = args[0]
	}
	w, _, err := userOperand(ctx, user, nil, 1)
	if err != nil {
		return whom{}, err
	}
	return w, notRoot(w, "agorctl terminal -u alice")
}

func termSize(f *os.File) (int, int) {
	if f == nil {
		return 80, 24
	}
	if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && rows > 0 {
		return cols, rows
	}
	return 80, 24
}

// session is one attached terminal on this terminal: raw mode, keys
// sent as typed, the window size followed, output copied.
type session struct {
	stdout   io.Writer
	stderr   io.Writer
	id, user string
	c        *apiclient.Client
	ctx      context.Context

	mu   sync.Mutex
	t    *apiclient.Terminal // the attachment now: another after the daemon went away
	size [2]int              // the last size sent, sent again on a new attachment
	// detached: run ended by Ctrl-], the program running on.
	detached bool
}

func (s *session) term() *apiclient.Terminal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t
}

func (s *session) resize(cols, rows int) {
	s.mu.Lock()
	s.size = [2]int{cols, rows}
	t := s.t
	s.mu.Unlock()
	_ = t.Send(apiwire.Frame{Resize: &[2]int{cols, rows}})
}

// reattachRetries bounds the wait for a daemon that went away (a second
// apart): the shell runs on in the executor meanwhile.
const reattachRetries = 60

// reattach attaches again after the stream broke off (the daemon
// restarted), from the output offset reached: the same shell, nothing
// shown twice or lost within its scrollback.
func (s *session) reattach(cause error) bool {
	old := s.term()
	_ = old.Close()
	fmt.Fprintf(s.stderr, "\r\n[agorctl: %v; reattaching to terminal %s]\r\n", cause, s.id)
	for range reattachRetries {
		t, err := s.c.AttachTerminalFrom(s.ctx, s.user, s.id, old.Offset)
		if err == nil {
			s.mu.Lock()
			s.t = t
			size := s.size
			s.mu.Unlock()
			_ = t.Send(apiwire.Frame{Resize: &size})
			fmt.Fprintf(s.stderr, "[agorctl: attached again to terminal %s]\r\n", s.id)
			return true
		}
		var e *apiclient.Error
		if errors.As(err, &e) || s.ctx.Err() != nil { // the daemon answered: the terminal is gone
			fmt.Fprintf(s.stderr, "agorctl terminal: %v\r\n", err)
			return false
		}
		select {
		case <-s.ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
	return false
}

func (s *session) run(stdin *os.File, cols, rows int) int {
	s.resize(cols, rows)
	detached := make(chan struct{})
	if stdin != nil { // else (in tests) no input: output only
		if fd := int(stdin.Fd()); term.IsTerminal(fd) {
			old, err := term.MakeRaw(fd)
			if err == nil {
				defer func() { _ = term.Restore(fd, old) }()
			}
			fmt.Fprintf(s.stderr, "[agorctl: terminal %s of %s; detach with Ctrl-]]\r\n", s.id, s.user)
		}
		go s.keys(stdin, detached)
		defer s.forwardResizes(stdin)()
	}
	code, err := s.term().Copy(s.stdout)
	for err != nil && !isDetached(detached) && !errors.Is(err, apiclient.ErrReplaced) && s.reattach(err) {
		code, err = s.term().Copy(s.stdout)
	}
	if errors.Is(err, apiclient.ErrReplaced) { // taken over: it runs on there; attaching back would take it again
		s.detached = true
		fmt.Fprintf(s.stderr, "\r\n[agorctl: terminal %s was attached elsewhere and runs on there; take it back with: agorctl terminal --attach %s %s]\r\n", s.id, s.id, s.user)
		return 0
	}
	if isDetached(detached) {
		s.detached = true
		fmt.Fprintf(s.stderr, "\r\n[agorctl: detached; reattach with: agorctl terminal --attach %s %s]\r\n", s.id, s.user)
		return 0
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "\r\nagorctl terminal: %v\r\n", err)
		return 1
	}
	return code
}

// send sends what was typed, on the next attachment when this one broke
// off (reattach), for as long as reattaching may take.
func (s *session) send(f apiwire.Frame) {
	for range reattachRetries * 10 {
		if s.term().Send(f) == nil || s.ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func isDetached(detached chan struct{}) bool {
	select {
	case <-detached:
		return true
	default:
		return false
	}
}

// keys sends what is typed; Ctrl-] detaches.
func (s *session) keys(stdin io.Reader, detached chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := stdin.Read(buf)
		for i := 0; i < n; i++ {
			if buf[i] == DetachKey {
				if i > 0 {
					_ = s.term().Send(apiwire.Frame{Input: buf[:i]})
				}
				close(detached)
				_ = s.term().Send(apiwire.Frame{Detach: true})
				return
			}
		}
		if n > 0 {
			s.send(apiwire.Frame{Input: append([]byte(nil), buf[:n]...)})
		}
		if err != nil {
			return // end of input: the shell keeps running until it exits
		}
	}
}

// forwardResizes sends the local size on every SIGWINCH.
func (s *session) forwardResizes(stdin *os.File) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				s.resize(termSize(stdin))
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
