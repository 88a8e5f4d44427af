package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/apiwire"
	"github.com/agor-sh/agor/internal/protocol"
)

// DetachKey (Ctrl-]) leaves the terminal running and returns to the
// local shell, as telnet's escape does.
const DetachKey = 0x1d

type terminalOptions struct {
	cwd, shell, attach string
}

// terminalCmd: agorctl terminal [--cwd DIR] [--shell PATH] [--attach ID] [USER]
func terminalCmd(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	var o terminalOptions
	a, rest, code, ok := parseAPI("terminal", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&o.cwd, "cwd", ".", "working `directory`, relative to the user's home")
		fs.StringVar(&o.shell, "shell", "", "`program` to run (default: the user's login shell)")
		fs.StringVar(&o.attach, "attach", "", "reattach to the running terminal `ID` instead of starting one")
	})
	if !ok {
		return code
	}
	name, err := terminalUser(rest)
	if err != nil {
		return fail(stderr, "terminal", err)
	}
	c := newAPIClient(a.socket)
	cols, rows := termSize(stdin)
	id := o.attach
	if id == "" {
		if id, err = spawn(ctx, c, name, o, cols, rows); err != nil {
			return fail(stderr, "terminal", err)
		}
	}
	conn, rd, err := attach(ctx, a.socket, name, id)
	if err != nil {
		return fail(stderr, "terminal", err)
	}
	defer conn.Close()
	s := &session{conn: conn, enc: json.NewEncoder(conn), stdout: stdout, stderr: stderr, id: id, user: name}
	return s.run(stdin, rd, cols, rows)
}

func terminalUser(rest []string) (string, error) {
	switch len(rest) {
	case 0:
		u, err := user.Current()
		if err != nil {
			return "", err
		}
		return u.Username, nil
	case 1:
		return rest[0], nil
	}
	return "", errors.New("usage: agorctl terminal [OPTIONS] [USER]")
}

func termSize(f *os.File) (int, int) {
	if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && rows > 0 {
		return cols, rows
	}
	return 80, 24
}

func spawn(ctx context.Context, c *apiClient, name string, o terminalOptions, cols, rows int) (string, error) {
	var res struct {
		TerminalID string `json:"terminal_id"`
	}
	p := protocol.SpawnTerminalParams{Cwd: o.cwd, Shell: o.shell, Cols: cols, Rows: rows}
	if err := c.do(ctx, "POST", "/v1/executors/"+url.PathEscape(name)+"/terminals", p, &res); err != nil {
		return "", err
	}
	return res.TerminalID, nil
}

// attach upgrades an HTTP request on the daemon's socket to the terminal's
// two-way frame stream.
func attach(ctx context.Context, socket, name, id string) (net.Conn, *bufio.Reader, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon at %s: %w", socket, err)
	}
	path := "/v1/executors/" + url.PathEscape(name) + "/terminals/" + url.PathEscape(id) + "/attach"
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n", path)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		var e struct{ Error apiwire.ErrorBody }
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(body, &e.Error) == nil && e.Error.Error.Message != "" {
			return nil, nil, fmt.Errorf("%s (%s)", e.Error.Error.Message, e.Error.Error.Reason)
		}
		return nil, nil, fmt.Errorf("attach: %s", resp.Status)
	}
	return conn, rd, nil
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
