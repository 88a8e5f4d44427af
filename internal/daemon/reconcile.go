package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/agor-sh/agor/internal/daemon/store"
)

// reconcileEvery is how often the daemon tries to write what a full
// store kept in memory: soon after space returns, and cheap meanwhile (a
// statfs, and a write per status kept).
const reconcileEvery = 2 * time.Second

// settle marks the tasks the last daemon left live as interrupted (those
// made before started only: this daemon's own are live) and gives its
// sessions left "running" their last task's status. It returns false when
// the store could not write them (a full disk), to be tried again.
func (d *Daemon) settle(started time.Time) bool {
	keep := make([]string, len(d.left))
	for i, t := range d.left {
		keep[i] = t.ID
	}
	n, err := d.store.MarkInterruptedBefore(started, keep...)
	if err == nil && n > 0 {
		d.log.Warn("tasks left running by the last daemon marked interrupted", "tasks", n)
	}
	var m int
	if err == nil {
		m, err = d.store.SettleSessions()
	}
	if err == nil && m > 0 {
		d.log.Info("sessions left running with no live task settled", "sessions", m)
	}
	if err != nil && !errors.Is(err, store.ErrFull) {
		d.log.Error("settling what the last daemon left", "err", err)
	}
	return err == nil
}

// leftRunning lists the tasks the last daemon left running whose
// executors may still run them: a systemd unit outlives the daemon, so
// this one takes them over (api.ResumeTasks). Other backends' executors
// go with their daemon (direct) or would be started anew only to say
// they do not know the task (Slurm): their tasks are interrupted.
func (d *Daemon) leftRunning(backend string) []store.Task {
	if backend != "systemd" {
		return nil
	}
	left, err := d.store.RunningBefore(d.started)
	if err != nil {
		d.log.Warn("cannot list the tasks the last daemon left running: they are interrupted", "err", err)
		return nil
	}
	if len(left) > 0 {
		d.log.Info("taking over the tasks the last daemon left running", "tasks", len(left))
	}
	return left
}

// reconcile writes, every reconcileEvery until ctx ends, what a full
// store kept in memory, and settles what the last daemon left once the
// store can write it.
func (d *Daemon) reconcile(ctx context.Context, settled bool) {
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !settled {
			settled = d.settle(d.started)
		}
		if n, err := d.store.Reconcile(); n > 0 {
			d.log.Info("statuses kept in memory written to the store", "statuses", n, "still_kept", d.store.Space().Pending, "err", err)
		}
	}
}

// lastReconcile tries once more, at stop, to write what a full store kept
// in memory, and puts each task end it still could not write in the
// journal: the next daemon marks such a task interrupted, and the journal
// is then the one record of how it really ended.
func (d *Daemon) lastReconcile() {
	_, _ = d.store.Reconcile()
	for id, f := range d.store.Unwritten() {
		d.log.Warn("task end lost at stop: the store is full", "task", id, "status", string(f.Status),
			"dropped_events", f.Dropped, "ended", f.At, "state_directory", d.cfg.Daemon.StateDir)
	}
}
