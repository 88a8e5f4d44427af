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

	mu    sync.Mutex
	tasks map[string]*taskState
	subs  map[string]map[*Subscription]struct{}
}

type taskState struct {
	next  int64              // every sequence below it has been stored
	ahead map[int64]struct{} // stored sequences above next
}

// NewSink returns a sink writing to store.
func NewSink(store Store, log *slog.Logger) *Sink {
	if log == nil {
		log = slog.Default()
	}
	return &Sink{store: store, log: log, tasks: map[string]*taskState{}, subs: map[string]map[*Subscription]struct{}{}}
}

// Put stores ev once. A sequence past the next expected one is stored
// too (events may be lost, never reordered by us) and the gap is logged.
func (s *Sink) Put(ev apiwire.StoredEvent) (Outcome, error) {
	if ev.TaskID == "" || ev.Sequence < 0 {
		return 0, fmt.Errorf("%w: task %q sequence %d", ErrInvalid, ev.TaskID, ev.Sequence)
	}
	s.mu.Lock()
	defer s.mu.Unlock() // held across Append: one writer path keeps order
	st := s.task(ev.TaskID)
	if _, seen := st.ahead[ev.Sequence]; seen || ev.Sequence < st.next {
		return Duplicate, nil
	}
	if err := s.store.Append(ev); errors.Is(err, ErrDuplicate) {
		st.record(ev.Sequence)
		return Duplicate, nil
	} else if err != nil {
		return 0, fmt.Errorf("store event %s/%d: %w", ev.TaskID, ev.Sequence, err)
	}
	if ev.Sequence > st.next {
		s.log.Warn("event sequence gap", "task_id", ev.TaskID, "missing_from", st.next, "missing_to", ev.Sequence-1)
	}
	st.record(ev.Sequence)
	s.publishLocked(ev)
	return Stored, nil
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

// Missing reports a task's gaps so far.
func (s *Sink) Missing(task string) []Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.tasks[task]; st != nil {
		return st.missing()
	}
	return nil
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
