package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// replaceOld has an executor that runs a binary from below revision
// `need` replaced by the installed one, when it holds no work: a package
// upgrade leaves running executors on their old binary until they are
// idle, and one from before the model gateway cannot serve a prompt
// under it. One with a task or a terminal keeps running (its work is
// its person's), and the prompt is refused, saying why and what to do.
// task is the prompt's own task, already running in the store.
func (s *Server) replaceOld(ctx context.Context, executor, task string, old protocol.PingResult, need int) (protocol.PingResult, error) {
	refuse := func(why string) error {
		return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonPingFailed,
			"the executor of %s runs %s (protocol revision %d, this daemon needs %d) and %s; it runs the installed version once idle (agorctl executors stop %s)",
			executor, old.Version, old.Protocol, need, why, executor)
	}
	if why := s.oldExecutorBusy(ctx, executor, task); why != "" {
		return old, refuse(why)
	}
	s.log().Info("replacing an idle executor that runs an older version", "user", executor,
		"version", old.Version, "protocol", old.Protocol, "needs", need)
	// The connection may close before the answer arrives: it went.
	err := s.Pool.Shutdown(ctx, executor, "replaced by the installed version")
	if err != nil && !errors.Is(err, rpc.ErrClosed) {
		return old, refuse("could not be stopped: " + err.Error())
	}
	ping, err := s.awaitRevision(ctx, executor, old.PID, need)
	if err != nil {
		return old, refuse("was stopped, but its successor " + err.Error())
	}
	s.log().Info("executor replaced by the installed version", "user", executor, "version", ping.Version, "protocol", ping.Protocol)
	return ping, nil
}

// oldExecutorBusy says what work executor holds besides task ("" none):
// a running task of its account, or a terminal.
func (s *Server) oldExecutorBusy(ctx context.Context, executor, task string) string {
	running, err := s.Store.RunningBefore(time.Now().Add(time.Hour))
	if err != nil {
		return "its tasks could not be listed: " + err.Error()
	}
	for _, t := range running {
		if t.UnixUser == executor && t.ID != task {
			return "runs task " + t.ID
		}
	}
	var terms protocol.ListTerminalsResult
	if err := s.Pool.Call(ctx, executor, protocol.MethodListTerminals, nil, &terms); err != nil {
		return "its terminals could not be listed: " + err.Error()
	}
	if n := len(terms.Terminals); n > 0 {
		return fmt.Sprintf("has %d terminal(s) open", n)
	}
	return ""
}

// awaitRevision connects to executor's next process (not pid) and
// returns its ping once it speaks revision need, for up to 30 s.
func (s *Server) awaitRevision(ctx context.Context, executor string, pid, need int) (protocol.PingResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, ping, err := s.Pool.Get(ctx, executor)
		switch {
		case err == nil && ping.PID != pid && ping.Protocol >= need:
			return ping, nil
		case err == nil && ping.PID != pid:
			return ping, fmt.Errorf("runs %s (protocol revision %d) too", ping.Version, ping.Protocol)
		case ctx.Err() != nil:
			return ping, fmt.Errorf("did not start: %v", ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
