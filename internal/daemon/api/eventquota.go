package api

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// eventQuotaStopWait bounds the stop_task call made for a task over its
// event quota.
const eventQuotaStopWait = 30 * time.Second

// EventQuotaHit is what the daemon does when a task's events pass a
// quota (events.Bounds.Exceeded): the sink has stored the task's notice
// and keeps nothing more of it; it is audited, and with stop the task is
// stopped, off the executor's read loop (this is called on it, and
// stop_task's reply comes on the same connection).
func (s *Server) EventQuotaHit(task string, o events.Owner, quota string, stop bool) {
	if s.Audit != nil {
		s.Audit.Aggregate(audit.Record{Action: audit.EventRefused, User: o.Name, Task: task, Reason: events.ReasonEventQuota + ": " + quota})
	}
	s.Log.Warn("task over its event quota; its events are no longer stored", "task_id", task, "user", o.Name, "quota", quota, "stop", stop)
	if !stop {
		return
	}
	s.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, eventQuotaStopWait)
		defer cancel()
		var res protocol.StopTaskResult
		p := protocol.StopTaskParams{TaskID: task, Reason: "over quotas." + quota}
		if err := s.Pool.Call(ctx, s.runningExecutor(o.Name, task), protocol.MethodStopTask, p, &res); err != nil {
			s.Log.Warn("stopping a task over its event quota failed", "task_id", task, "err", err)
		}
	})
}
