// Command agorctl is the command line of agor's operators and users.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/rpc"
	"github.com/agor-sh/agor/internal/version"
)

const manual = `NAME
    agorctl - command line for agor, the per-user AI agent and terminal service

SYNOPSIS
    agorctl executor ping --socket PATH [--timeout DURATION]
    agorctl executor ensure [OPTIONS] USER...
    agorctl executor stop [OPTIONS] USER...
    agorctl executor list [OPTIONS] [--json]
    agorctl version

COMMANDS
    executor ping    Connect to an executor's socket as this process's user, send
                     "ping", and print its reply (pid, uid, user, version, uptime)
                     as JSON. Only root and the daemon's account are served, so run
                     it as one of those. Under systemd the first connection starts
                     the user's executor (agor-executor@USER.socket).
    executor ensure  Bring up each USER's executor, all at once, the way the daemon
                     does: check the user against the configuration (an existing
                     account, not root, uid >= min_uid, allowed users/groups), start
                     agor-executor@USER.socket over D-Bus (backend systemd, allowed
                     for user agor by the polkit rule) or start the executor itself
                     (backend direct), then ping it. Prints "USER {ping reply}".
    executor stop    Stop each USER's executor socket and service.
    executor list    List executors with their socket and service state.
    version          Print agorctl's version.

OPTIONS of ensure, stop and list
    --config FILE     daemon configuration (default /etc/agor/config.yaml; missing: defaults)
    --backend NAME    systemd or direct (default: the configuration's execution.backend)
    --executor PATH   agor-executor, for the direct backend (default /usr/libexec/agor/agor-executor)
    --timeout D       give up after D (default 30s)

EXIT STATUS
    0 success; 1 the operation failed (refused, closed, timed out); 2 usage error.

EXAMPLES
    sudo -u agor agorctl executor ping --socket /run/agor/executors/alice.sock
    sudo -u agor agorctl executor ensure alice bob
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, manual)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch {
	case args[0] == "version":
		fmt.Fprintln(stdout, "agorctl", version.Version)
		return 0
	case args[0] == "executor" && len(args) > 1:
		if cmd, ok := executorCommands[args[1]]; ok {
			return cmd(ctx, args[2:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agorctl: unknown command %q (see agorctl --help)\n", args[0])
	return 2
}

var executorCommands = map[string]func(context.Context, []string, io.Writer, io.Writer) int{
	"ping":   executorPing,
	"ensure": executorEnsure,
	"stop":   executorStop,
	"list":   executorList,
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "help" }

func executorPing(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl executor ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "the executor's Unix socket `path`, e.g. /run/agor/executors/alice.sock")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this `duration`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *socket == "" {
		fmt.Fprintln(stderr, "agorctl executor ping: --socket is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := ping(ctx, *socket)
	if err != nil {
		fmt.Fprintf(stderr, "agorctl executor ping: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(res))
	return 0
}

func ping(ctx context.Context, socket string) (json.RawMessage, error) {
	c, err := rpc.Dial(ctx, socket, nil, rpc.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var res json.RawMessage
	if err := c.Call(ctx, "ping", struct{}{}, &res); err != nil {
		if errors.Is(err, rpc.ErrClosed) {
			return nil, fmt.Errorf("%s closed the connection (is this user allowed? only root and the daemon's account are served): %w", socket, err)
		}
		return nil, err
	}
	return res, nil
}
