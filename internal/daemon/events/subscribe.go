package events

import "github.com/agor-sh/agor/internal/wire/apiwire"

// Subscription delivers a task's new events in the order stored. Its
// queue grows as events wait, up to the bound given to Subscribe: a
// follower that keeps up holds a few events, not the bound's worth (a
// 4096-slot channel per follower was ~300 KiB each, idle or not).
type Subscription struct {
	ready  chan struct{} // a token when events or the close wait
	sink   *Sink
	task   string
	max    int
	queue  []apiwire.StoredEvent // guarded by sink.mu
	queued int64                 // bytes of event data in queue
	lagged bool
	closed bool
}

// MaxQueuedBytes bounds the event data waiting for one follower, however
// few events hold it (an event may be up to a 1 MiB line).
const MaxQueuedBytes = 8 << 20

// Subscribe follows task's new events, queueing up to buf of them and
// MaxQueuedBytes. A listener that falls further behind is cut off
// (Lagged reports it) rather than slowing the sink or growing the
// daemon: it resumes from the store by sequence.
func (s *Sink) Subscribe(task string, buf int) *Subscription {
	sub := &Subscription{ready: make(chan struct{}, 1), sink: s, task: task, max: max(buf, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[task] == nil {
		s.subs[task] = map[*Subscription]struct{}{}
	}
	s.subs[task][sub] = struct{}{}
	return sub
}

// Ready is signalled when Next has something: events, or the end.
func (sub *Subscription) Ready() <-chan struct{} { return sub.ready }

// Next takes the events waiting, in order; open is false once the
// subscription has ended (task ended, lagged or closed) and nothing more
// will come.
func (sub *Subscription) Next() (evs []apiwire.StoredEvent, open bool) {
	sub.sink.mu.Lock()
	defer sub.sink.mu.Unlock()
	evs, sub.queue, sub.queued = sub.queue, nil, 0
	return evs, !sub.closed
}

// Close stops the subscription; events already queued stay for Next.
func (sub *Subscription) Close() {
	sub.sink.mu.Lock()
	defer sub.sink.mu.Unlock()
	sub.closeLocked(false)
}

// Lagged reports whether the subscription was cut off for falling behind.
func (sub *Subscription) Lagged() bool {
	sub.sink.mu.Lock()
	defer sub.sink.mu.Unlock()
	return sub.lagged
}

func (sub *Subscription) closeLocked(lagged bool) {
	if sub.closed {
		return
	}
	sub.closed, sub.lagged = true, lagged
	delete(sub.sink.subs[sub.task], sub)
	sub.wake()
}

func (sub *Subscription) wake() {
	select {
	case sub.ready <- struct{}{}:
	default: // a token is waiting already
	}
}

func (s *Sink) publishLocked(ev apiwire.StoredEvent) {
	for sub := range s.subs[ev.TaskID] {
		if len(sub.queue) >= sub.max || sub.queued+int64(len(ev.Data)) > MaxQueuedBytes {
			sub.closeLocked(true)
			continue
		}
		sub.queue = append(sub.queue, ev)
		sub.queued += int64(len(ev.Data))
		sub.wake()
	}
}

// MemoryStore keeps events in memory, for tests and the direct backend
// until the message store is configured.
type MemoryStore struct {
	Events []apiwire.StoredEvent
}

// Append adds ev.
func (m *MemoryStore) Append(ev apiwire.StoredEvent) error {
	m.Events = append(m.Events, ev)
	return nil
}

// Followers is how many subscriptions follow task now.
func (s *Sink) Followers(task string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs[task])
}
