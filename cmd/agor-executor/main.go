// Command agor-executor serves one user's agent work, terminals and files
// to agor-daemon over JSON-RPC on a socket-activated Unix socket. The
// program is internal/executor's Run; this is its command line.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agor-sh/agor/internal/executor"
	"github.com/agor-sh/agor/internal/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LauncherArg {
		// Started as the sandbox launcher: confine this process, then
		// exec the command (returns only on failure).
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // after the first signal, a second one kills
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	o, code := executor.ParseFlags(os.Args[1:], os.Stdout, os.Stderr)
	if o == nil {
		return code
	}
	o.Stdin, o.Stderr = os.Stdin, os.Stderr
	return executor.Run(ctx, *o)
}
