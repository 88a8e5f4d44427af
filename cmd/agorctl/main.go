// Command agorctl is the command line of agor's operators and users: it
// drives agor-daemon through its API socket, and reaches executors over
// their sockets and systemd's D-Bus API directly when asked to. The
// program is internal/ctl/cli's Run.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agor-sh/agor/internal/ctl/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // a second signal kills
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
