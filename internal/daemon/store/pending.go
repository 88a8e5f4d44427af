package store

import (
	"errors"
	"fmt"
	"sync"
)

// pending holds the task ends and session updates a full store could not
// write: reads show them (overlay), Reconcile writes them once space
// returns. What it holds is bounded by the tasks that ran during the
// episode, each kept once (the latest wins).
type pending struct {
	mu       sync.Mutex
	tasks    map[string]Finish  // by task id
	sessions map[string]Session // by session id
}

func (p *pending) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tasks) + len(p.sessions)
}

func (p *pending) keepTask(id string, f Finish) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tasks == nil {
		p.tasks = map[string]Finish{}
	}
	if old, ok := p.tasks[id]; ok && old.Status.Final() && !f.Status.Final() {
		return // an end is never undone by a late "running"
	}
	p.tasks[id] = f
}

func (p *pending) keepSession(s Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = map[string]Session{}
	}
	p.sessions[s.ID] = s
}

// task overlays what is kept for t.
func (p *pending) task(t Task) Task {
	p.mu.Lock()
	f, ok := p.tasks[t.ID]
	p.mu.Unlock()
	if !ok {
		return t
	}
	t.Status, t.Error, t.Dropped = f.Status, f.Error, f.Dropped
	if f.Result != nil {
		t.Result = f.Result
	}
	if f.Status.Final() {
		t.EndedAt = f.At
	}
	return t
}

// session overlays what is kept for s.
func (p *pending) session(s Session) Session {
	p.mu.Lock()
	k, ok := p.sessions[s.ID]
	p.mu.Unlock()
	if !ok {
		return s
	}
	s.Cwd, s.Model, s.PermissionMode, s.Status, s.AgentSessionID, s.UpdatedAt = k.Cwd, k.Model, k.PermissionMode, k.Status, k.AgentSessionID, k.UpdatedAt
	return s
}

func (p *pending) snapshot() (map[string]Finish, map[string]Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := make(map[string]Finish, len(p.tasks))
	for k, v := range p.tasks {
		t[k] = v
	}
	s := make(map[string]Session, len(p.sessions))
	for k, v := range p.sessions {
		s[k] = v
	}
	return t, s
}

// doneTask forgets what was kept for id if it is still f (a newer end
// kept meanwhile stays).
func (p *pending) doneTask(id string, f Finish) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.tasks[id]; ok && cur.At.Equal(f.At) && cur.Status == f.Status {
		delete(p.tasks, id)
	}
}

func (p *pending) doneSession(s Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.sessions[s.ID]; ok && cur.UpdatedAt.Equal(s.UpdatedAt) {
		delete(p.sessions, s.ID)
	}
}

// Unwritten returns the task ends a full store still keeps in memory
// only, by task id: what a daemon stopping now would lose but for the
// journal.
func (db *DB) Unwritten() map[string]Finish {
	tasks, _ := db.pending.snapshot()
	return tasks
}

// Reconcile writes what a full store kept in memory and returns how many
// statuses it wrote; once nothing is left and the filesystem has room,
// the episode is over. The daemon calls it every few seconds, which also
// begins an episode when the free space falls below the floor.
func (db *DB) Reconcile() (int, error) {
	_ = db.room(1) // an episode begins when the floor is crossed, asked or not
	tasks, sessions := db.pending.snapshot()
	n := 0
	var errs []error
	for id, f := range tasks {
		err := db.writeFinish(id, f)
		if err == nil || errors.Is(err, ErrTaskEnded) || errors.Is(err, ErrNotFound) {
			db.pending.doneTask(id, f)
			n++
			continue
		}
		errs = append(errs, err)
	}
	for _, s := range sessions {
		_, err := db.writeSession(s)
		if err == nil || errors.Is(err, ErrNotFound) {
			db.pending.doneSession(s)
			n++
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		if db.releaseReserve() { // once: the room it frees is for exactly this
			m, err := db.Reconcile()
			return n + m, err
		}
		return n, fmt.Errorf("reconcile %d statuses: %w", len(errs), errors.Join(errs...))
	}
	if db.pending.count() == 0 {
		db.space.wrote()
		if !db.Space().Full {
			db.keepReserve()
		}
	}
	return n, nil
}
