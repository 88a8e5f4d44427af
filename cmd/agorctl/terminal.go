package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"os/user"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/apiclient"
	"github.com/agor-sh/agor/internal/apiwire"
	"github.com/agor-sh/agor/internal/protocol"
)

// DetachKey (Ctrl-]) leaves the terminal running and returns to the
// local shell, as telnet's escape does.
const DetachKey = 0x1d

func newTerminal(a *app) *cobra.Command {
	var f apiFlags
	var p protocol.SpawnTerminalParams
	var attachID string
	c := &cobra.Command{
		Use:   "terminal [USER]",
		Short: "open a shell as USER (default: you) on this terminal",
		Long: `Open a shell as USER (default: you) on a terminal in their executor and
attach this terminal to it, in raw mode; the window size follows yours
(SIGWINCH). Ctrl-] detaches and leaves the shell running (for 5 minutes
unattached); --attach ID comes back to it with its recent output.

` + daemonHelp,
		Example: `  agorctl terminal
  agorctl terminal --cwd src alice
  agorctl terminal --attach term_7c2e alice`,
		Annotations: map[string]string{"exit": `the shell's own status (128+N when signal N ended it; 0 on detach);
otherwise 1 the operation failed, 2 usage error, 130 interrupted.`},
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeUsers(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := terminalUser(args)
			if err != nil {
				return err
			}
			stdin, _ := a.stdin.(*os.File)
			return runTerminal(cmd.Context(), a, apiclient.New(f.socket), stdin, name, p, attachID)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().StringVar(&p.Cwd, "cwd", ".", "working `directory`, relative to the user's home")
	c.Flags().StringVar(&p.Shell, "shell", "", "`program` to run (default: the user's login shell)")
	c.Flags().StringVar(&attachID, "attach", "", "reattach to the running terminal `ID` instead of starting one")
	return c
}

func runTerminal(ctx context.Context, a *app, c *apiclient.Client, stdin *os.File, name string, p protocol.SpawnTerminalParams, id string) error {
	p.Cols, p.Rows = termSize(stdin)
	if id == "" {
		var err error
		if id, err = c.SpawnTerminal(ctx, name, p); err != nil {
			return err
		}
	}
	conn, rd, err := c.AttachTerminal(ctx, name, id)
	if err != nil {
		return err
	}
	defer conn.Close()
	s := &session{conn: conn, enc: json.NewEncoder(conn), stdout: a.stdout, stderr: a.stderr, id: id, user: name}
	return exitWith(s.run(stdin, rd, p.Cols, p.Rows))
}

func terminalUser(rest []string) (string, error) {
	if len(rest) == 1 {
		return rest[0], nil
	}
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	return u.Username, nil
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

// session is one attached terminal on this terminal.
type session struct {
	conn     net.Conn
	mu       sync.Mutex // around enc: keys and resizes come from two goroutines
	enc      *json.Encoder
	stdout   io.Writer
	stderr   io.Writer
	id, user string
}

func (s *session) send(f apiwire.Frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enc.Encode(f)
}

func (s *session) run(stdin *os.File, rd *bufio.Reader, cols, rows int) int {
	if stdin == nil {
		stdin = os.Stdin
	}
	fd := int(stdin.Fd())
	if term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err == nil {
			defer func() { _ = term.Restore(fd, old) }()
		}
		fmt.Fprintf(s.stderr, "[agorctl: terminal %s of %s; detach with Ctrl-]]\r\n", s.id, s.user)
	}
	_ = s.send(apiwire.Frame{Resize: &[2]int{cols, rows}})
	detached := make(chan struct{})
	go s.keys(stdin, detached)
	stopWinch := s.forwardResizes(stdin)
	defer stopWinch()
	code, err := s.output(rd)
	select {
	case <-detached:
		fmt.Fprintf(s.stderr, "\r\n[agorctl: detached; reattach with: agorctl terminal --attach %s %s]\r\n", s.id, s.user)
		return 0
	default:
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "\r\nagorctl terminal: %v\r\n", err)
		return 1
	}
	return code
}

// keys sends what is typed; Ctrl-] detaches.
func (s *session) keys(stdin io.Reader, detached chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := stdin.Read(buf)
		for i := 0; i < n; i++ {
			if buf[i] == DetachKey {
				if i > 0 {
					_ = s.send(apiwire.Frame{Input: buf[:i]})
				}
				close(detached)
				_ = s.send(apiwire.Frame{Detach: true})
				return
			}
		}
		if n > 0 && s.send(apiwire.Frame{Input: append([]byte(nil), buf[:n]...)}) != nil {
			return
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
				cols, rows := termSize(stdin)
				_ = s.send(apiwire.Frame{Resize: &[2]int{cols, rows}})
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// output copies the terminal's output until it exits (its status is
// returned) or the stream ends.
func (s *session) output(rd *bufio.Reader) (int, error) {
	dec := json.NewDecoder(rd)
	for {
		var f struct {
			apiwire.Frame
			Error string `json:"error"`
		}
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return 0, errors.New("the daemon closed the terminal's stream")
			}
			return 0, err
		}
		switch {
		case f.Error != "":
			return 0, errors.New(f.Error)
		case f.Exit != nil:
			return exitStatus(f.Exit), nil
		case len(f.Output) > 0:
			if _, err := s.stdout.Write(f.Output); err != nil {
				return 0, err
			}
		}
	}
}

// exitStatus is the shell's status as a shell reports it: 128+N when a
// signal ended it.
func exitStatus(e *protocol.TerminalExit) int {
	if e.Signal == "" {
		return e.ExitCode
	}
	for n := syscall.Signal(1); n < 65; n++ {
		if n.String() == e.Signal {
			return 128 + int(n)
		}
	}
	return 128 + int(syscall.SIGHUP)
}
