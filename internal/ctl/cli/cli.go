// Package cli is agorctl's program: the command line of agor's operators
// and users. It drives agor-daemon through its API socket, and reaches
// executors over their sockets and systemd's D-Bus API directly when
// asked to; cmd/agorctl only calls Run.
//
// The commands are defined once, with github.com/spf13/cobra, and their
// help, completions and man page come from those definitions.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Exit statuses, the same for every command (see exitStatusHelp).
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitTimeout   = 124 // as timeout(1)
	exitInterrupt = 130 // 128 + SIGINT, as a shell reports it
)

// Run runs one agorctl command line (args without the program's name)
// and returns its exit status; only the caller exits.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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

// asWritten is v as compact JSON without encoding/json's HTML escapes, so
// a command shows as the agent wrote it ("id -un > x", not "\u003e").
func asWritten(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
