package task

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// A task belongs to the executor, not to the connection execute_prompt
// came on: when the daemon goes (a restart, an upgrade, a crash) the
// agent works on, its events are kept, and the next daemon takes the task
// over with resume_task. containerd's shims are the model: containers
// run on while containerd restarts, and it reconnects to them.

// keptBytes bounds the events kept of one task for a daemon that is away
// (the newest are kept): minutes of an agent's output.
const keptBytes = 8 << 20

// keepEnded is how long an ended task's result and events are kept for
// a daemon that may not have stored them (it may die as they are sent).
const keepEnded = 10 * time.Minute

// keptEvents are a task's newest events, in sequence order.
type keptEvents struct {
	evs   []protocol.ReportMessage
	bytes int
}

func (k *keptEvents) add(m protocol.ReportMessage) {
	k.evs = append(k.evs, m)
	k.bytes += len(m.EventData)
	drop := 0
	for k.bytes > keptBytes && drop < len(k.evs)-1 {
		k.bytes -= len(k.evs[drop].EventData)
		drop++
	}
	if drop > 0 {
		k.evs = append(k.evs[:0:0], k.evs[drop:]...)
	}
}

// after is the kept events with a sequence above seq.
func (k *keptEvents) after(seq int64) []protocol.ReportMessage {
	for i, m := range k.evs {
		if m.Sequence > seq {
			return k.evs[i:]
		}
	}
	return nil
}

// owned is one task the executor runs: its host and, once it ended, its
// result.
type owned struct {
	h       *host
	done    chan struct{} // closed when result is set
	result  protocol.ExecutePromptResult
	release func() // the executor's hold while the result waits (under Service.mu)
}

// own registers a task for resume_task until it is forgotten.
func (s *Service) own(id string, h *host) *owned {
	o := &owned{h: h, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned == nil {
		s.owned = map[string]*owned{}
	}
	s.owned[id] = o
	return o
}

// ended records a task's result. A daemon that is connected takes it as
// execute_prompt's or resume_task's reply; otherwise it waits keepEnded
// for one, holding the executor up meanwhile.
func (s *Service) ended(id string, o *owned, out protocol.ExecutePromptResult) {
	o.result = out
	close(o.done)
	if conn, _, _ := o.h.current(); !gone(conn) {
		// The reply is going out on conn; the daemon may still die before
		// it stores it, and its successor asks again: kept, not held up.
		s.forgetSoon(id, o, keepEnded)
		return
	}
	if s.Hold != nil {
		s.mu.Lock()
		o.release = s.Hold.Hold()
		s.mu.Unlock()
	}
	s.log().Info("task ended while no daemon was connected; its result waits", "task", id, "status", out.Status, "for", keepEnded.String())
	s.forgetSoon(id, o, keepEnded)
}

// forgetSoon drops the task after d, unless a resume took it over since.
func (s *Service) forgetSoon(id string, o *owned, d time.Duration) {
	time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.owned[id] == o {
			delete(s.owned, id)
		}
		release := o.release
		o.release = nil
		s.mu.Unlock()
		if release != nil {
			release()
		}
	})
}

// letResultsGo releases the executor's holds for results no daemon took
// (it is stopping: they are lost with it).
func (s *Service) letResultsGo() {
	s.mu.Lock()
	var rs []func()
	for _, o := range s.owned {
		if o.release != nil {
			rs = append(rs, o.release)
			o.release = nil
		}
	}
	s.mu.Unlock()
	for _, r := range rs {
		r()
	}
}

// resumeTask serves resume_task: the task's kept events past
// after_sequence on this connection, then its result when it ends.
func (s *Service) resumeTask(ctx context.Context, r *rpc.Request) (any, error) {
	var p protocol.ResumeTaskParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	o := s.owned[p.TaskID]
	s.mu.Unlock()
	if o == nil {
		return nil, rpc.Errorf(protocol.CodeTaskNotFound, protocol.ReasonTaskNotFound, "no task %q in this executor", p.TaskID)
	}
	s.pool().report.to(r.Conn)
	s.gw.to(r.Conn)
	o.h.attach(r.Conn, p.SessionToken, p.AfterSequence)
	s.log().Info("task taken over by the daemon", "task", p.TaskID, "after_sequence", p.AfterSequence)
	select {
	case <-o.done: // ended while no daemon was connected: taken now
		s.forgetSoon(p.TaskID, o, time.Second)
	default:
	}
	return o.wait(ctx)
}

// wait is the task's result once it ends, or the caller's end.
func (o *owned) wait(ctx context.Context) (any, error) {
	select {
	case <-o.done:
		return o.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
