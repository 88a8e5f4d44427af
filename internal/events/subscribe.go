package events

// Subscription delivers a task's new events in the order stored.
type Subscription struct {
	C      <-chan Event
	c      chan Event
	sink   *Sink
	task   string
	lagged bool
	closed bool
}

// Subscribe follows task's new events, buffering up to buf. A listener
// that falls further behind is cut off (Lagged reports it) rather than
// slowing the sink: it resumes from the store by sequence.
func (s *Sink) Subscribe(task string, buf int) *Subscription {
	c := make(chan Event, buf)
	sub := &Subscription{C: c, c: c, sink: s, task: task}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[task] == nil {
		s.subs[task] = map[*Subscription]struct{}{}
	}
	s.subs[task][sub] = struct{}{}
	return sub
}

// Close stops the subscription; C is closed.
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
	close(sub.c)
	delete(sub.sink.subs[sub.task], sub)
}

func (s *Sink) publishLocked(ev Event) {
	for sub := range s.subs[ev.TaskID] {
		select {
		case sub.c <- ev:
		default:
			sub.closeLocked(true)
		}
	}
}

// MemoryStore keeps events in memory, for tests and the direct backend
// until the message store is configured.
type MemoryStore struct {
	Events []Event
}

// Append adds ev.
func (m *MemoryStore) Append(ev Event) error {
	m.Events = append(m.Events, ev)
	return nil
}
