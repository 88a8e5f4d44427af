package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func (s *Server) registerBuiltins() {
	s.mux.RegisterInline(protocol.MethodPing, rpc.Method(s.ping))
	s.mux.Register(protocol.MethodShutdown, rpc.Method(s.shutdown))
	s.mux.Register(protocol.MethodSocketHolders, rpc.Method(s.socketHolders))
}

// socketHolders says whether a socket (a TCP client's, found by the
// daemon in the kernel's table) is held by one of this person's confined
// tasks. Only this executor, as its person, may read her processes'
// descriptors; a confined task cannot answer for it (it cannot reach
// this process).
func (s *Server) socketHolders(_ context.Context, p protocol.SocketHoldersParams) (protocol.SocketHoldersResult, error) {
	if p.Inode == 0 {
		return protocol.SocketHoldersResult{}, rpc.InvalidParams("inode", "must be a socket's inode")
	}
	n, confined := sandbox.SocketHolders(p.Inode, os.Getpid())
	return protocol.SocketHoldersResult{Holders: n, Confined: confined}, nil
}

func (s *Server) ping(context.Context, protocol.PingParams) (protocol.PingResult, error) {
	now := time.Now()
	return protocol.PingResult{
		Pong:      true,
		Timestamp: now.UnixMilli(),
		PID:       os.Getpid(),
		UID:       os.Getuid(),
		User:      CurrentUser(),
		Version:   version.Version,
		UptimeMS:  now.Sub(s.started).Milliseconds(),
		// Asked each time: cheap (one system call), and what a doctor
		// wants is the kernel's answer to this process now.
		LandlockABI: sandbox.ABI(),
		SandboxView: sandboxView(),
		Protocol:    protocol.Revision,
	}, nil
}

// sandboxView is whether this executor can build a confined task's view
// (probed once, by running /bin/true through its own launcher). Only the
// agor-executor binary is its own launcher (its main dispatches the
// launcher's argument first); another binary serving these methods (a
// test's) says nothing rather than run itself as one.
func sandboxView() string {
	self, err := os.Executable()
	if err != nil || filepath.Base(self) != "agor-executor" {
		return ""
	}
	err = sandbox.NamespacesWork(self)
	if err != nil {
		return err.Error()
	}
	return sandbox.ViewNamespace
}

// shutdown lets other in-flight work finish for up to timeout_ms, then
// stops the executor; the reply goes out before the connections close.
func (s *Server) shutdown(_ context.Context, p protocol.ShutdownParams) (protocol.ShutdownResult, error) {
	reason := p.Reason
	if reason == "" {
		reason = "requested"
	}
	s.letGo() // what is no work to finish (idle warm agents) is not waited for
	status := "idle"
	if s.inFlight() > 1 { // more than this request
		status = "completed"
		if !s.waitInFlight(1, time.Duration(p.TimeoutMS)*time.Millisecond) {
			status = "interrupted"
		}
	}
	grace := s.cfg.StopTimeout
	if status == "interrupted" {
		grace = time.Second // time enough for this reply; the rest is cancelled
	}
	s.stop("shutdown requested: "+reason, grace)
	return protocol.ShutdownResult{Status: status}, nil
}

// loggedMux is the mux with a journal line for every request.
type loggedMux struct {
	rpc.HandlerFunc
	*rpc.Mux
}

// Handle resolves the ambiguity between the embedded fields.
func (l loggedMux) Handle(ctx context.Context, r *rpc.Request) (any, error) {
	return l.HandlerFunc(ctx, r)
}

// windDown are the methods a stopping executor still serves: they end
// work, they do not start it.
var windDown = map[string]bool{
	protocol.MethodPing: true, protocol.MethodShutdown: true, protocol.MethodStopTask: true,
	protocol.MethodTerminateTerminal: true, protocol.MethodResizeTerminal: true, protocol.MethodUnwatch: true,
	protocol.MethodCancelJob: true, protocol.MethodReleaseWarmAgent: true,
}

// outcome is how a request that did not fail ended, as its result says.
func outcome(res any) string {
	switch r := res.(type) {
	case protocol.ExecResult:
		return fmt.Sprintf("exit status %d", r.ExitCode)
	case protocol.ExecutePromptResult:
		if r.Error != nil {
			return r.Status + " (" + r.Error.Code + ")"
		}
		return r.Status
	}
	return "ok"
}

// logged wraps the mux so every request leaves a journal line with its
// method (ping only at debug level: the daemon pings often).
func (s *Server) logged(log *slog.Logger) rpc.Handler {
	return loggedMux{Mux: s.mux, HandlerFunc: func(ctx context.Context, r *rpc.Request) (any, error) {
		start := time.Now()
		if !r.Notification && !windDown[r.Method] && s.isStopping() {
			// Said plainly, so the daemon starts a new executor for the
			// request rather than report the work cancelled.
			return nil, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonShuttingDown, "the executor is shutting down; no new work")
		}
		res, err := s.mux.Handle(ctx, r)
		level := slog.LevelInfo
		if r.Method == protocol.MethodPing || r.Notification {
			level = slog.LevelDebug
		}
		took := time.Since(start).Milliseconds()
		attrs := []any{"method", r.Method, "duration_ms", took}
		// The message says what happened on its own (journalctl's plain
		// output shows only it); the fields are for filtering.
		msg := fmt.Sprintf("%s for %s: %s in %d ms", r.Method, s.user(), outcome(res), took)
		if err != nil {
			level = max(level, slog.LevelInfo)
			attrs = append(attrs, "err", err)
			msg = fmt.Sprintf("%s for %s: failed in %d ms: %v", r.Method, s.user(), took, err)
		}
		log.Log(ctx, level, msg, attrs...)
		return res, err
	}}
}
