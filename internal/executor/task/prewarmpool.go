package task

import (
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// putPrewarmed keeps a pre-warmed agent a, if it fits: it counts toward
// every bound of warm agents, but may evict only other unused
// pre-warms, never one that has run a turn. The reason is "" when kept;
// otherwise a is the caller's to stop.
func (w *warmPool) putPrewarmed(a *warmAgent) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed || !w.limits.on() || w.limits.PrewarmIdle <= 0:
		return protocol.PrewarmOff
	case w.agents[a.key] != nil:
		return protocol.PrewarmAlreadyWarm
	}
	if a.release == nil && w.hold != nil {
		a.release = w.hold.Hold()
	}
	a.used, a.prewarmed = time.Now(), true
	a.idle = time.AfterFunc(w.limits.PrewarmIdle, func() { w.expire(a, "prewarm unused") })
	w.agents[a.key] = a
	out := w.overLocked()
	for _, v := range out {
		if !v.prewarmed || v == a {
			w.restoreLocked(out, a)
			return protocol.PrewarmNoRoom
		}
	}
	w.changedLocked()
	for _, v := range out {
		w.log.Info("warm agent stopped", "reason", "prewarm evicted", "pid", v.live.Pid())
		w.stopLater(v)
	}
	return ""
}

// restoreLocked undoes an eviction that would have taken a used agent
// for the pre-warmed a: the evicted go back, a goes (its caller stops it).
func (w *warmPool) restoreLocked(out []*warmAgent, a *warmAgent) {
	for _, v := range out {
		if v == a {
			continue
		}
		w.agents[v.key] = v
		w.rearmLocked(v)
	}
	a.idle.Stop()
	delete(w.agents, a.key)
	if a.release != nil {
		a.release()
		a.release = nil
	}
}

// rearmLocked starts v's idle timer again after overLocked stopped it:
// the bound it had, counted from now (a little longer than it had left).
func (w *warmPool) rearmLocked(v *warmAgent) {
	d := w.limits.Idle
	why := "idle"
	if v.prewarmed {
		d, why = w.limits.PrewarmIdle, "prewarm unused"
	}
	v.idle = time.AfterFunc(d, func() { w.expire(v, why) })
}

// has says the pool keeps an agent for key.
func (w *warmPool) has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.agents[key] != nil
}
