package executor

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agor-sh/agor/internal/executor/files"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/executor/procexec"
	"github.com/agor-sh/agor/internal/executor/task"
	"github.com/agor-sh/agor/internal/executor/terminal"
	"github.com/agor-sh/agor/internal/executor/watch"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// registerPrimitives adds the environment primitives (exec, files,
// watching, terminals) to srv; the returned func releases what they hold.
func registerPrimitives(srv *Server, root *fsroot.Root, agents *task.AgentsFile, box *sandbox.Policy, warm task.WarmLimits, gateway string, log *slog.Logger) (closeAll func()) {
	if root == nil {
		for _, m := range protocol.ExecutorMethods {
			if m != protocol.MethodPing && m != protocol.MethodShutdown { // the server's own
				srv.Mux().Register(m, unavailable)
			}
		}
		return func() {}
	}
	f := files.New(root)
	f.Register(srv.Mux())
	(&procexec.Service{Root: root, Hold: srv, Sandbox: box}).Register(srv.Mux())
	w := &watch.Service{Root: root}
	w.Register(srv.Mux())
	terms := terminal.New(terminal.Config{Root: root, Hold: srv, Sandbox: box})
	terms.Register(srv.Mux())
	srv.HandleRaw(protocol.MethodAttachTerminalRaw, terms.ServeRaw)
	tasks := &task.Service{Root: root, Hold: srv, AgentsFile: agents, Log: log, Sandbox: box, Warm: warm, GatewaySocket: gateway, Terminals: terms}
	tasks.Register(srv.Mux())
	srv.OnStop(tasks.Close) // idle warm agents are no work to wait for
	srv.OnForce(func() { tasks.Interrupt(errors.New("the executor is stopping")) })
	return func() {
		tasks.Close() // warm agents
		terms.Close()
		w.Close()
		w.Wait()
		f.Close()
	}
}

// unavailable answers the primitives when no root directory could be
// opened (e.g. an account whose home does not exist).
func unavailable(context.Context, *rpc.Request) (any, error) {
	return nil, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonNoRoot, "this executor has no root directory (the user's home is missing; see --root)")
}
