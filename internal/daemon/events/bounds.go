package events

import (
	"encoding/json"
	"fmt"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// SizedStore is a Store that says how many bytes an event added (a raw
// line already kept for the task adds none). Without it the sink counts
// the event's data as it came.
type SizedStore interface {
	AppendSized(ev apiwire.StoredEvent) (int64, error)
}

// Owner is the account a task's events count for: its person's name and
// the uid the name had.
type Owner struct {
	Name string
	UID  int64
}

// Bounds limit the event bytes the sink stores: of one task, and of one
// person's tasks together, running ones included. A zero bound is none.
type Bounds struct {
	PerTask, PerUser int64
	// Held says what o's stored events hold already; asked once per
	// person, then kept up to date by the sink (Recount forgets it).
	Held func(o Owner) (int64, error)
	// Exceeded is called once per task, after its notice is stored and
	// outside the sink's lock, with the quota's name. It must not block.
	Exceeded func(task string, o Owner, quota string)
}

// Quota names, as the configuration spells them.
const (
	QuotaPerTask = "max_event_bytes_per_task"
	QuotaPerUser = "max_event_bytes_per_user"
)

// ReasonEventQuota is the code of the notice a task gets when a bound is hit.
const ReasonEventQuota = "event_quota_exceeded"

// SetBounds sets the bounds; tasks already over them are capped at their
// next event.
func (s *Sink) SetBounds(b Bounds) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bounds = b
}

// Begin says whose task is: its events count toward o's bound from now.
func (s *Sink) Begin(task string, o Owner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.task(task)
	st.owner = &o
}

// Recount forgets what each person's events hold, so that it is read from
// the store again (after retention removed some).
func (s *Sink) Recount() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.held)
}

// overLocked names the bound ev would pass, or "".
func (s *Sink) overLocked(st *taskState, ev apiwire.StoredEvent) string {
	n := int64(len(ev.Data))
	if b := s.bounds.PerTask; b > 0 && st.bytes+n > b {
		return QuotaPerTask
	}
	if b := s.bounds.PerUser; b > 0 && st.owner != nil && s.heldLocked(*st.owner)+n > b {
		return QuotaPerUser
	}
	return ""
}

// heldLocked is what o's events hold, read from the store the first time.
// A store that cannot say counts as empty: the task's own bound still holds.
func (s *Sink) heldLocked(o Owner) int64 {
	if n, ok := s.held[o]; ok {
		return n
	}
	var n int64
	if s.bounds.Held != nil {
		if v, err := s.bounds.Held(o); err == nil {
			n = v
		} else {
			s.log.Warn("event bytes of a person unknown", "user", o.Name, "err", err)
		}
	}
	s.held[o] = n
	return n
}

// countLocked adds n stored bytes to the task and its owner.
func (s *Sink) countLocked(st *taskState, n int64) {
	st.bytes += n
	if st.owner != nil {
		s.held[*st.owner] = s.heldLocked(*st.owner) + n
	}
}

// notice is the event stored in place of the first one over a bound: the
// task says, in its own stream, why the rest of its events are missing.
func (s *Sink) notice(ev apiwire.StoredEvent, quota string) apiwire.StoredEvent {
	limit := s.bounds.PerTask
	if quota == QuotaPerUser {
		limit = s.bounds.PerUser
	}
	data, _ := json.Marshal(map[string]any{"type": "error", "data": map[string]any{
		"code": ReasonEventQuota, "quota": quota, "limit": limit,
		"message": fmt.Sprintf("events not stored past quotas.%s (%d bytes)", quota, limit),
	}})
	return apiwire.StoredEvent{TaskID: ev.TaskID, Sequence: ev.Sequence, Timestamp: ev.Timestamp, Type: "error", Data: data}
}

// appendLocked stores ev and returns the bytes it took.
func (s *Sink) appendLocked(ev apiwire.StoredEvent) (int64, error) {
	if sz, ok := s.store.(SizedStore); ok {
		return sz.AppendSized(ev)
	}
	return int64(len(ev.Data)), s.store.Append(ev)
}
