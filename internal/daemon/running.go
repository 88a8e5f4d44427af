package daemon

import (
	"sync"

	"github.com/agor-sh/agor/internal/executorunit"
)

// running remembers which executors are up, so that the audit trail has
// one executor_started per real start and one executor_stopped per real
// stop. systemd sends PropertiesChanged with ActiveState on every change
// of a unit's properties (each STATUS= line, each counter), not only on a
// change of state, and it reports "inactive" for a unit first loaded.
type running struct {
	mu sync.Mutex
	up map[string]bool // bounded by the executors running at once
}

// transition takes a service's change and says whether it starts or stops
// an executor known to be running. A service that fails before it was
// ever active (refused at start, exit 78) is neither.
func (r *running) transition(ev executorunit.UnitChange) (started, stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ev.Ended():
		stopped = r.up[ev.User]
		delete(r.up, ev.User)
	case ev.State == "active" && !r.up[ev.User]:
		r.mark(ev.User)
		started = true
	}
	return started, stopped
}

// already marks an executor found running when the daemon started: its
// start was audited by the daemon before, its stop is audited by this one.
func (r *running) already(user string) {
	r.mu.Lock()
	r.mark(user)
	r.mu.Unlock()
}

func (r *running) mark(user string) {
	if r.up == nil {
		r.up = map[string]bool{}
	}
	r.up[user] = true
}
