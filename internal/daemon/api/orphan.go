package api

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// DefaultOrphanGrace is how long a prompt's task runs on after its client
// went away: time to follow it again (agorctl events --follow TASK) before
// it is stopped. A task started detached (POST /v1/sessions/{id}/prompt,
// agorctl prompt --detach) has no client to lose and runs to its end.
const DefaultOrphanGrace = 30 * time.Second

func (s *Server) orphanGrace() time.Duration {
	if s.OrphanGrace > 0 {
		return s.OrphanGrace
	}
	return DefaultOrphanGrace
}

// orphaned follows a task whose client went away: each grace period it
// stops the task when nobody follows it, so that no agent works on (and
// spends the person's tokens) unseen. done carries the task's result.
func (s *Server) orphaned(ctx context.Context, t started, done <-chan apiwire.PromptLine) {
	grace := s.orphanGrace()
	s.log().Info("prompt client went away: task "+t.id+" is stopped in "+grace.String()+" unless someone follows it",
		"task", t.id, "user", t.Person)
	tick := time.NewTicker(grace)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			if s.Events.Followers(t.id) > 0 || !s.stopOrphan(ctx, t, grace) {
				continue
			}
			select { // the executor ends the task; runTask records it
			case <-done:
			case <-ctx.Done():
			}
			return
		}
	}
}

// stopOrphan asks the executor to stop the task; false: it could not be
// asked, and the next period tries again.
func (s *Server) stopOrphan(ctx context.Context, t started, grace time.Duration) bool {
	why := "its client went away " + grace.String() + " ago and nobody follows it"
	var res protocol.StopTaskResult
	p := protocol.StopTaskParams{TaskID: t.id, Reason: why}
	if err := s.Pool.Call(ctx, t.Executor, protocol.MethodStopTask, p, &res); err != nil {
		s.log().Warn("stopping task "+t.id+" failed", "task", t.id, "user", t.Person, "err", err)
		return false
	}
	s.log().Info("task "+t.id+" stopped: "+why, "task", t.id, "user", t.Person)
	return true
}
