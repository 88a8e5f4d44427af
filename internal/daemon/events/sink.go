// Package events receives a task's streamed agent events (report_message):
// it stores each (task, sequence) exactly once, notices gaps, and
// publishes new events to live listeners.
package events

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// Store keeps events durably; the message store implements it.
type Store interface {
	Append(ev apiwire.StoredEvent) error
}

// Outcome says what Put did with an event.
type Outcome int

// Outcomes of Put.
const (
	Stored    Outcome = iota // new, stored and published
	Duplicate                // seen before: dropped
	Capped                   // over a bound: the task's notice stored in its place, or nothing once it has one
)

// ErrInvalid is returned for an event that cannot belong to any task.
var ErrInvalid = errors.New("invalid event")

// ErrDuplicate is what a Store's Append wraps for a (task, sequence) it
// already holds (an executor resending after the daemon restarted): the
// Sink reports it as Duplicate, not as a failure.
var ErrDuplicate = errors.New("duplicate event")

// Range is a run of missing sequence numbers, From to To inclusive.
type Range = apiwire.Range

// Sink is safe for concurrent use.
type Sink struct {
	store Store
	log   *slog.Logger

	mu     sync.Mutex
	tasks  map[string]*taskState
	subs   map[string]map[*Subscription]struct{}
	bounds Bounds
	held   map[Owner]int64 // stored event bytes by person, once read
}

type taskState struct {
	next   int64              // every sequence below it has been stored
	ahead  map[int64]struct{} // stored sequences above next
	owner  *Owner             // whose bound the task counts toward (Begin)
	bytes  int64              // stored by this sink
	capped bool               // over a bound: nothing more is stored
	lost   Lost               // received but not stored: the store failed
}

// Lost is what the store could not keep of a task's events: how many,
// and the first error (a full disk names the state directory).
type Lost struct {
	Events int64
	Err    error
}

// NewSink returns a sink writing to store.
func NewSink(store Store, log *slog.Logger) *Sink {
	if log == nil {
		log = slog.Default()
	}
	return &Sink{store: store, log: log, tasks: map[string]*taskState{}, subs: map[string]map[*Subscription]struct{}{}, held: map[Owner]int64{}}
}

// Put stores ev once. A sequence past the next expected one is stored
// too (events may be lost, never reordered by us) and the gap is logged.
// An event that would pass a bound is replaced by the task's notice, and
// the task's later events are not stored (Capped); Bounds.Exceeded hears
// of it once.
func (s *Sink) Put(ev apiwire.StoredEvent) (Outcome, error) {
	if ev.TaskID == "" || ev.Sequence < 0 {
		return 0, fmt.Errorf("%w: task %q sequence %d", ErrInvalid, ev.TaskID, ev.Sequence)
	}
	out, exceeded, err := s.put(ev)
	if exceeded != nil {
		exceeded()
	}
	return out, err
}

// put is Put under the lock, held across Append: one writer path keeps
// order. When this event passed a bound it returns the call to make
// about it, once the lock is released.
func (s *Sink) put(ev apiwire.StoredEvent) (Outcome, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.task(ev.TaskID)
	if _, seen := st.ahead[ev.Sequence]; seen || ev.Sequence < st.next {
		return Duplicate, nil, nil
	}
	if st.capped { // counted as received, so that it is no gap
		st.record(ev.Sequence)
		return Capped, nil, nil
	}
	quota := s.overLocked(st, ev)
	if quota != "" {
		st.capped, ev = true, s.notice(ev, quota)
	}
	n, err := s.appendLocked(ev)
	if errors.Is(err, ErrDuplicate) {
		st.record(ev.Sequence)
		return Duplicate, nil, nil
	} else if err != nil {
		st.capped = false      // the notice is still to be stored
		st.record(ev.Sequence) // received: lost, not a gap
		st.lost.Events++
		if st.lost.Err == nil {
			st.lost.Err = err
		}
		return 0, nil, fmt.Errorf("store event %s/%d: %w", ev.TaskID, ev.Sequence, err)
	}
	if ev.Sequence > st.next {
		s.log.Warn("event sequence gap", "task_id", ev.TaskID, "missing_from", st.next, "missing_to", ev.Sequence-1)
	}
	st.record(ev.Sequence)
	s.countLocked(st, n)
	s.publishLocked(ev)
	if quota == "" {
		return Stored, nil, nil
	}
	var o Owner
	if st.owner != nil {
		o = *st.owner
	}
	cb, task := s.bounds.Exceeded, ev.TaskID
	if cb == nil {
		return Capped, nil, nil
	}
	return Capped, func() { cb(task, o, quota) }, nil
}

func (s *Sink) task(id string) *taskState {
	st := s.tasks[id]
	if st == nil {
		st = &taskState{ahead: map[int64]struct{}{}}
		s.tasks[id] = st
	}
	return st
}

func (st *taskState) record(seq int64) {
	if seq != st.next {
		st.ahead[seq] = struct{}{}
		return
	}
	st.next++
	for {
		if _, ok := st.ahead[st.next]; !ok {
			return
		}
		delete(st.ahead, st.next)
		st.next++
	}
}

// missing lists the gaps below the highest stored sequence.
func (st *taskState) missing() []Range {
	if len(st.ahead) == 0 {
		return nil
	}
	seqs := make([]int64, 0, len(st.ahead))
	for q := range st.ahead {
		seqs = append(seqs, q)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var out []Range
	from := st.next
	for _, q := range seqs {
		if q > from {
			out = append(out, Range{From: from, To: q - 1})
		}
		from = q + 1
	}
	return out
}

// Continue says every sequence of task below next is stored already (a
// new daemon taking over a task the last one ran): they are not gaps.
func (s *Sink) Continue(task string, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.task(task)
	for st.next < next {
		delete(st.ahead, st.next)
		st.next++
	}
	for _, ok := st.ahead[st.next]; ok; _, ok = st.ahead[st.next] {
		delete(st.ahead, st.next)
		st.next++
	}
}

// Missing reports a task's gaps so far.
func (s *Sink) Missing(task string) []Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.tasks[task]; st != nil {
		return st.missing()
	}
	return nil
}

// Lost reports what the store could not keep of task's events so far.
func (s *Sink) Lost(task string) Lost {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.tasks[task]; st != nil {
		return st.lost
	}
	return Lost{}
}

// End forgets a finished task, returning the events it never received.
func (s *Sink) End(task string) []Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gaps []Range
	if st := s.tasks[task]; st != nil {
		gaps = st.missing()
	}
	delete(s.tasks, task)
	for sub := range s.subs[task] {
		sub.closeLocked(false)
	}
	delete(s.subs, task)
	if len(gaps) > 0 {
		s.log.Warn("task ended with lost events", "task_id", task, "gaps", fmt.Sprint(gaps))
	}
	return gaps
}
