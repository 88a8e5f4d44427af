package daemon

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
)

// retentionOf is the store's part of the retention configuration.
func retentionOf(r config.Retention) store.Retention {
	return store.Retention{
		EventMaxAge: config.Days(r.EventMaxAgeDays), TaskMaxAge: config.Days(r.TaskMaxAgeDays),
		SessionMaxAge: config.Days(r.SessionMaxAgeDays), AuditMaxAge: config.Days(r.AuditMaxAgeDays),
		MaxBytes: r.StoreMaxBytes,
	}
}

// sweep runs the retention sweep every sweep_interval_s until ctx ends.
func (d *Daemon) sweep(ctx context.Context) {
	t := time.NewTicker(time.Duration(d.cfg.Retention.SweepIntervalS) * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.sweepOnce()
		}
	}
}

// sweepOnce removes what has expired and logs what went (journalctl
// AGOR_SWEEP... fields: sessions, tasks, events, bytes before and after).
func (d *Daemon) sweepOnce() {
	d.audit.Prune()
	sw, err := d.store.Sweep(retentionOf(d.cfg.Retention))
	d.srv.Events.Recount() // what each person's events hold, read anew
	d.srv.Retained.Add(sw.Sessions, sw.Tasks, sw.Events, sw.Audit)
	args := []any{"sessions", sw.Sessions, "tasks", sw.Tasks, "events", sw.Events, "audit_rows", sw.Audit,
		"bytes_before", sw.BytesBefore, "bytes_after", sw.BytesAfter, "took_ms", sw.Took.Milliseconds()}
	if err != nil {
		d.log.Error("store sweep failed", append(args, "err", err)...)
		return
	}
	d.log.Info("store swept", args...)
}
