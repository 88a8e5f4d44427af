package broker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// PermissionRequest is an agent's question waiting for a person's answer.
type PermissionRequest = apiwire.PermissionRequest

// Decision answers a permission request: request_permission's result.
type Decision = protocol.RequestPermissionResult

// PermissionEvent tells a subscriber that a request was asked or, with
// Resolved set, that it left the queue and how.
type PermissionEvent struct {
	Request  PermissionRequest
	Resolved bool
	Decision Decision
}

// Errors of the pending queue.
var (
	ErrNotPending  = errors.New("permission request not pending (answered, timed out or cancelled)")
	ErrTooManyOpen = errors.New("too many open permission requests")
)

type pending struct {
	req    PermissionRequest
	answer chan Decision // cap 1: whoever takes the entry sends once
}

// queue holds open permission requests. An entry is answered by whoever
// removes it from open first (Decide, timeout, cancel, task end), so
// exactly one answer is ever sent.
type queue struct {
	max int // open requests per user

	mu      sync.Mutex
	open    map[string]*pending
	perUser map[string]int
	subs    map[*PermissionFeed]struct{}
}

func newQueue(max int) *queue {
	return &queue{max: max, open: map[string]*pending{}, perUser: map[string]int{}, subs: map[*PermissionFeed]struct{}{}}
}

// ask queues req and waits for an answer, at most timeout. A cancelled
// ctx withdraws the request and returns ctx's error.
func (q *queue) ask(ctx context.Context, req PermissionRequest, timeout time.Duration) (Decision, error) {
	p, err := q.add(req)
	if err != nil {
		return Decision{}, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-p.answer:
		return d, nil
	case <-t.C:
		d, _ := q.withdraw(p, Decision{Reason: "timeout"})
		return d, nil
	case <-ctx.Done():
		if d, ours := q.withdraw(p, Decision{Reason: "cancelled"}); !ours {
			return d, nil // answered in the same instant: keep the answer
		}
		return Decision{Reason: "cancelled"}, ctx.Err()
	}
}

func (q *queue) add(req PermissionRequest) (*pending, error) {
	req.ID = randid.New(12)
	p := &pending{req: req, answer: make(chan Decision, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.perUser[req.User] >= q.max {
		return nil, ErrTooManyOpen
	}
	q.open[req.ID] = p
	q.perUser[req.User]++
	q.publishLocked(PermissionEvent{Request: req})
	return p, nil
}

// withdraw removes p with decision d unless someone answered first, and
// returns the answer that stands and whether it is d.
func (q *queue) withdraw(p *pending, d Decision) (Decision, bool) {
	if q.resolve(p.req.ID, d) == nil {
		<-p.answer // our own d, sent by resolve
		return d, true
	}
	return <-p.answer, false
}

// resolve takes id out of the queue and answers it with d.
func (q *queue) resolve(id string, d Decision) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.open[id]
	if p == nil {
		return ErrNotPending
	}
	delete(q.open, id)
	if q.perUser[p.req.User]--; q.perUser[p.req.User] <= 0 {
		delete(q.perUser, p.req.User)
	}
	p.answer <- d
	q.publishLocked(PermissionEvent{Request: p.req, Resolved: true, Decision: d})
	return nil
}

func (q *queue) cancelTask(task string) {
	q.mu.Lock()
	var ids []string
	for id, p := range q.open {
		if p.req.Task == task {
			ids = append(ids, id)
		}
	}
	q.mu.Unlock()
	for _, id := range ids {
		_ = q.resolve(id, Decision{Reason: "task_ended"}) // lost a race with an answer: fine
	}
}

func (q *queue) list() []PermissionRequest {
	q.mu.Lock()
	out := make([]PermissionRequest, 0, len(q.open))
	for _, p := range q.open {
		out = append(out, p.req)
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].AskedAt.Before(out[j].AskedAt) })
	return out
}

// PermissionFeed delivers permission events as they happen.
type PermissionFeed struct {
	C <-chan PermissionEvent

	q      *queue
	c      chan PermissionEvent
	lagged bool
}

func (q *queue) subscribe(buf int) *PermissionFeed {
	c := make(chan PermissionEvent, buf)
	s := &PermissionFeed{C: c, q: q, c: c}
	q.mu.Lock()
	q.subs[s] = struct{}{}
	q.mu.Unlock()
	return s
}

// publishLocked never blocks: a subscriber that falls behind is cut off
// (C closes, Lagged reports it) and resumes from Pending.
func (q *queue) publishLocked(ev PermissionEvent) {
	for s := range q.subs {
		select {
		case s.c <- ev:
		default:
			s.lagged = true
			q.dropLocked(s)
		}
	}
}

func (q *queue) dropLocked(s *PermissionFeed) {
	if _, ok := q.subs[s]; ok {
		delete(q.subs, s)
		close(s.c)
	}
}

// Close stops the subscription; C is closed.
func (s *PermissionFeed) Close() {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	s.q.dropLocked(s)
}

// Lagged reports whether the subscription was cut off for falling behind.
func (s *PermissionFeed) Lagged() bool {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.lagged
}
