package daemon

import (
	"log/slog"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/executorunit"
)

// TestExecutorStartsAuditedOnce feeds unitChanged what systemd sends for
// alice's service: "inactive" when the unit is first loaded, then for each
// start activating, active, and more PropertiesChanged signals that carry
// ActiveState=active again (each STATUS= line); for each stop
// deactivating, inactive. A refused start (activating, failed) is neither.
func TestExecutorStartsAuditedOnce(t *testing.T) {
	t.Parallel()
	l, err := audit.Open(audit.Options{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &Daemon{pool: &pool.Pool{}, audit: l}
	svc := func(state, sub string) executorunit.UnitChange {
		return executorunit.UnitChange{User: "alice", Kind: "service", State: state, Sub: sub}
	}
	d.unitChanged(svc("inactive", "dead")) // loaded, never started
	const starts = 3
	for range starts {
		d.unitChanged(executorunit.UnitChange{User: "alice", Kind: "socket", State: "active", Sub: "running"})
		d.unitChanged(svc("activating", "start"))
		for range 5 { // READY=1, then STATUS= lines
			d.unitChanged(svc("active", "running"))
		}
		d.unitChanged(svc("deactivating", "stop-sigterm"))
		d.unitChanged(svc("inactive", "dead"))
		d.unitChanged(svc("inactive", "dead"))
	}
	d.unitChanged(svc("activating", "start"))
	d.unitChanged(svc("failed", "failed")) // refused before it served
	count := func(a audit.Action) int { return len(l.Query(audit.Filter{Action: a, User: "alice"})) }
	if got := count(audit.ExecutorStarted); got != starts {
		t.Errorf("%d executor_started records for %d starts", got, starts)
	}
	if got := count(audit.ExecutorStopped); got != starts {
		t.Errorf("%d executor_stopped records for %d stops", got, starts)
	}
}
