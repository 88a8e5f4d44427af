package api

import (
	"fmt"
	"io"
	"sync/atomic"
)

// Retained counts what the daemon's retention sweeps removed, for
// /v1/metrics, beside the store's size (Size, when set).
type Retained struct {
	Size                           func() int64
	sessions, tasks, events, audit atomic.Int64
}

// Add counts one sweep's removals.
func (r *Retained) Add(sessions, tasks, events, audit int64) {
	r.sessions.Add(sessions)
	r.tasks.Add(tasks)
	r.events.Add(events)
	r.audit.Add(audit)
}

// write puts the store's gauge and the removal counters in the
// Prometheus text format.
func (r *Retained) write(w io.Writer) {
	if r == nil {
		return
	}
	if r.Size != nil {
		fmt.Fprintf(w, "# HELP agor_store_bytes Size of the daemon's store on disk (database and WAL).\n# TYPE agor_store_bytes gauge\nagor_store_bytes %d\n", r.Size())
	}
	fmt.Fprintln(w, "# HELP agor_retention_removed_total Rows removed by the retention sweep, by kind.\n# TYPE agor_retention_removed_total counter")
	for _, c := range []struct {
		kind string
		n    *atomic.Int64
	}{{"sessions", &r.sessions}, {"tasks", &r.tasks}, {"events", &r.events}, {"audit", &r.audit}} {
		fmt.Fprintf(w, "agor_retention_removed_total{kind=%q} %d\n", c.kind, c.n.Load())
	}
}
