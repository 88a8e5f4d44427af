// Command agorctl is the command line of agor's operators and users: it
// drives agor-daemon through its API socket, and reaches executors over
// their sockets and systemd's D-Bus API directly when asked to.
//
// The commands are defined once, with github.com/spf13/cobra, and their
// help, completions and man page come from those definitions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses, the same for every command (see exitStatusHelp).
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitTimeout   = 124 // as timeout(1)
	exitInterrupt = 130 // 128 + SIGINT, as a shell reports it
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // a second signal kills
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one agorctl command line and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(&app{stdin: stdin, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(ctx, err)
	var e *exitError
	if errors.As(err, &e) && e.err == nil {
		return code // already said, e.g. exec's command failed
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	if code == exitUsage {
		fmt.Fprintf(stderr, "See '%s --help'.\n", cmd.CommandPath())
	}
	return code
}

// exitCode maps a command's error to agorctl's exit status.
func exitCode(ctx context.Context, err error) int {
	var e *exitError
	switch {
	case errors.As(err, &e):
		return e.code
	case ctx.Err() != nil: // SIGINT or SIGTERM
		return exitInterrupt
	case errors.Is(err, context.DeadlineExceeded):
		return exitTimeout
	}
	return exitFailure
}

// exitError ends agorctl with code; err (if any) is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage error: agorctl exits 2 and points at the help.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// exitWith ends agorctl with code, saying nothing more.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}
