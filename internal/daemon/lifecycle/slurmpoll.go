package lifecycle

import (
	"context"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/slurm"
)

// submitted records user's new job and returns Watch's fn, to tell it.
func (s *Slurm) submitted(user, jobID string) func(executorunit.UnitChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.submits++
	r := s.remoteLocked(user)
	r.jobID, r.state, r.node, r.submit = jobID, "PENDING", "", s.submits
	r.touch()
	return s.emit
}

// poll reads the queue once and applies what changed.
func (s *Slurm) poll(ctx context.Context) {
	byID, asked, ok := s.queue(ctx)
	if !ok {
		return
	}
	var events []executorunit.UnitChange
	var ended []string
	s.mu.Lock()
	for user, r := range s.users {
		if r.jobID == "" {
			continue
		}
		j, known := byID[r.jobID]
		if !known && r.submit > asked {
			continue // submitted while squeue ran: not gone, not yet listed
		}
		if !known {
			j = slurm.Job{ID: r.jobID, State: "GONE"} // the controller forgot it: long over
		}
		if j.State == r.state && (j.Node == "" || j.Node == r.node) {
			continue
		}
		r.state = j.State
		if j.Node != "" {
			r.node = j.Node
		}
		r.touch()
		ev := executorunit.UnitChange{User: user, Kind: "service", State: serviceState(j.State), Sub: strings.ToLower(j.State), JobID: r.jobID, Node: r.node}
		events = append(events, ev)
		if j.Ended() {
			ended = append(ended, r.jobID)
			if r.parked != nil {
				r.parked.Close()
				r.parked = nil
			}
		}
	}
	emit := s.emit
	s.mu.Unlock()
	for _, id := range ended {
		if err := s.Jobs.Revoke(id); err != nil {
			s.log().Warn("revoking an ended job's token", "job", id, "err", err)
		}
	}
	for _, ev := range events {
		s.log().Info("executor job state", "user", ev.User, "job", ev.JobID, "state", ev.Sub, "node", ev.Node)
		if emit != nil {
			emit(ev)
		}
	}
}

// queue is one squeue, by job id, and the submissions made before it
// began: a job submitted later may be missing from it.
func (s *Slurm) queue(ctx context.Context) (map[string]slurm.Job, uint64, bool) {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.mu.Lock()
	asked := s.submits
	s.mu.Unlock()
	jobs, err := s.Queue(qctx)
	if err != nil {
		s.log().Warn("squeue failed; job states unknown until the next poll", "err", err)
		return nil, 0, false
	}
	byID := make(map[string]slurm.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	return byID, asked, true
}
