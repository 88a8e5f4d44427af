package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/slurm"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ErrJobEnded: the executor's job ended (cancelled, failed, out of time)
// before it dialled back, or while the daemon waited for it.
var ErrJobEnded = errors.New("the executor's Slurm job ended")

// Slurm runs each person's executor as a Slurm job of theirs. Nobody here
// holds root or a SlurmUser key: the person's own executor on this login
// host (Local, socket-activated as them) runs sbatch and scancel, and the
// job's executor dials back over TLS with the job's token (dialback). One
// squeue every poll interval follows every user's jobs at once.
type Slurm struct {
	Policy executorunit.Policy
	// Network names a person's network set: under proxy or none they
	// are refused (this backend cannot enforce it); nil: not checked.
	Network executorunit.NetworkFunc
	Local   executorunit.Backend // the person's executor on this host: it submits as them
	Jobs    *dialback.Jobs
	Config  config.Slurm
	Queue   func(ctx context.Context) ([]slurm.Job, error) // one squeue for all users
	// IdleTimeout: a dialled-back connection the daemon has not taken for
	// this long (its pool let it go) is told to shut down, which ends
	// the job.
	IdleTimeout time.Duration
	// Shutdown asks user's executor to shut down over the daemon's own
	// connection, if it has one (the pool's); nil error: asked.
	Shutdown func(ctx context.Context, user string) error
	Log      *slog.Logger

	mu      sync.Mutex
	users   map[string]*remote
	emit    func(executorunit.UnitChange) // Watch's fn; nil until Watch runs
	started time.Time
	// recovered runs recover once, before Watch or a request, whichever
	// comes first: a request served before Watch ran found no job and
	// submitted a second (the Slurm suite under load: job 6, then 7).
	recovered sync.Once
	submits   uint64 // submissions so far: a poll's queue predates the later ones
}

// remote is what the daemon knows of one person's job.
type remote struct {
	jobID, node, state string
	parked             net.Conn // dialled back, not yet taken by the pool
	parkedAt           time.Time
	changed            chan struct{} // closed (and replaced) at every change
	submit             uint64        // Slurm.submits when jobID was submitted (0: recovered)
}

func (s *Slurm) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// remoteLocked returns user's entry, made on first use.
func (s *Slurm) remoteLocked(user string) *remote {
	if s.users == nil {
		s.users = map[string]*remote{}
	}
	r := s.users[user]
	if r == nil {
		r = &remote{changed: make(chan struct{})}
		s.users[user] = r
	}
	return r
}

func (r *remote) touch() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// live: a job that has not ended is known for the user.
func (r *remote) live() bool { return r.jobID != "" && !(slurm.Job{State: r.state}).Ended() }

// Ensure submits user's job unless one is queued or running, and returns
// an Executor whose Dial waits for the job to dial back.
func (s *Slurm) Ensure(ctx context.Context, user string) (executorunit.Executor, error) {
	if err := executorunit.HostOnly(user, "slurm"); err != nil {
		return executorunit.Executor{}, err
	}
	ex, err := s.Policy.Check(ctx, user)
	if err != nil {
		return executorunit.Executor{}, err
	}
	if err := executorunit.RefuseUnconfined(ctx, s.Network, "slurm", user); err != nil {
		return executorunit.Executor{}, err
	}
	s.recovered.Do(s.recover)
	s.mu.Lock()
	r := s.remoteLocked(user)
	live := r.live() || r.parked != nil
	s.mu.Unlock()
	if !live {
		if err := s.submit(ctx, user, uint32(ex.UID)); err != nil {
			return executorunit.Executor{}, err
		}
	}
	ex.Socket = ""
	ex.Dial = func(ctx context.Context) (net.Conn, error) { return s.take(ctx, user, uint32(ex.UID)) }
	return ex, nil
}

// submit has the person's own executor sbatch the job.
func (s *Slurm) submit(ctx context.Context, user string, uid uint32) error {
	token, err := s.Jobs.Issue(user, uid)
	if err != nil {
		return fmt.Errorf("%w: issuing the job's token: %v", executorunit.ErrUnitFailed, err)
	}
	params := s.jobParams(ctx, user, token)
	var res protocol.SubmitJobResult
	if err := s.callLocal(ctx, user, protocol.MethodSubmitJob, params, &res); err != nil {
		_ = s.Jobs.RevokeToken(token)
		return fmt.Errorf("%w: sbatch as %s: %v", executorunit.ErrUnitFailed, user, err)
	}
	if err := s.Jobs.Bind(token, res.JobID); err != nil {
		return fmt.Errorf("%w: job %s: %v", executorunit.ErrUnitFailed, res.JobID, err)
	}
	emit := s.submitted(user, res.JobID)
	s.log().Info("executor job submitted", "user", user, "job", res.JobID, "partition", params.Partition)
	if emit != nil {
		emit(executorunit.UnitChange{User: user, Kind: "service", State: "activating", Sub: "pending", JobID: res.JobID})
	}
	return nil
}

// jobParams is user's sbatch: the configured settings (default, groups,
// user) and the script that starts the executor with the token on stdin.
func (s *Slurm) jobParams(ctx context.Context, user, token string) protocol.SubmitJobParams {
	c := s.Config
	js := c.Job
	if u, err := s.Policy.Resolver().LookupName(ctx, user); err == nil && len(c.Groups) > 0 {
		for _, g := range c.Groups {
			if in, err := s.Policy.Resolver().InGroup(ctx, u, g.Group); err == nil && in {
				js = js.Over(g.JobSettings)
			}
		}
	}
	if u, ok := c.Users[user]; ok {
		js = js.Over(u)
	}
	p := protocol.SubmitJobParams{Script: s.script(token), JobName: c.JobName, Partition: js.Partition,
		TimeLimit: js.TimeLimit, Memory: js.Memory, CPUs: js.CPUs, Output: c.Output}
	if c.TimeLimitNoticeS > 0 {
		p.Signal = fmt.Sprintf("B:USR1@%d", c.TimeLimitNoticeS)
	}
	return p
}

// script starts the executor in the job; the token is a here document,
// so it is in no argument list or environment (the script itself is
// readable by the user and root only).
func (s *Slurm) script(token string) string {
	c := s.Config
	args := []string{quote(c.ExecutorPath), "--dial", quote(c.AdvertiseAddr()), "--dial-ca", quote(c.CAFile),
		"--idle-timeout", fmt.Sprintf("%ds", c.ReconnectS)}
	if c.ServerName != "" {
		args = append(args, "--dial-name", quote(c.ServerName))
	}
	return "#!/bin/sh\n# agor executor: dials the daemon back (agor-executor(8))\nexec " + strings.Join(args, " ") +
		" <<'AGOR_TOKEN'\n" + token + "\nAGOR_TOKEN\n"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// callLocal calls method on user's executor on this host.
func (s *Slurm) callLocal(ctx context.Context, user, method string, params, result any) error {
	ex, err := s.Local.Ensure(ctx, user)
	if err != nil {
		return err
	}
	c, err := rpc.Dial(ctx, ex.Socket, nil, rpc.Options{Logger: s.log().With("user", user)})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, method, params, result)
}

// Deliver takes a job's proved dial-back (the dialback Server's Deliver).
func (s *Slurm) Deliver(a dialback.Accepted) {
	conn := &releasing{Conn: a.Conn, release: func() { s.Jobs.Release(a.Job) }}
	s.mu.Lock()
	r := s.remoteLocked(a.Job.User)
	if r.jobID != "" && r.jobID != a.Job.JobID && r.live() {
		// An older job of the person's still dials: the newer one counts.
		s.mu.Unlock()
		s.log().Warn("dial-back from a job that is not the person's current one; closing it", "user", a.Job.User, "job", a.Job.JobID, "current", r.jobID)
		conn.Close()
		return
	}
	old := r.parked
	r.jobID, r.node, r.state = a.Job.JobID, a.Job.Node, "RUNNING"
	r.parked, r.parkedAt = conn, time.Now()
	r.touch()
	emit := s.emit
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if emit != nil {
		emit(executorunit.UnitChange{User: a.Job.User, Kind: "service", State: "active", Sub: "running", JobID: a.Job.JobID, Node: a.Job.Node})
	}
}

// take waits for user's job to dial back and hands its connection over.
// A job that ended meanwhile (cancelled between the last poll and this
// call, say) is replaced once by a new one: the caller wanted an executor.
func (s *Slurm) take(ctx context.Context, user string, uid uint32) (net.Conn, error) {
	resubmitted := false
	for {
		s.mu.Lock()
		r := s.remoteLocked(user)
		if c := r.parked; c != nil {
			r.parked = nil
			s.mu.Unlock()
			return c, nil
		}
		live, job, state, changed := r.live(), r.jobID, r.state, r.changed
		s.mu.Unlock()
		if !live {
			if resubmitted {
				return nil, fmt.Errorf("%w: job %s is %s", ErrJobEnded, job, state)
			}
			s.log().Info("the executor's job ended; submitting another", "user", user, "job", job, "state", state)
			if err := s.submit(ctx, user, uid); err != nil {
				return nil, err
			}
			resubmitted = true
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the executor's job to start and dial back: %w", ctx.Err())
		}
	}
}

// Stop ends user's job gracefully: shutdown over JSON-RPC on the
// executor's connection (the daemon's, through Shutdown, or one waiting
// to be taken), which lets running work finish; a running job with no
// connection gets SIGTERM (scancel --batch), the same graceful stop.
// Whatever is still there after the grace, or still queued, is cancelled.
func (s *Slurm) Stop(ctx context.Context, user string) error {
	s.mu.Lock()
	r := s.remoteLocked(user)
	job, live, running, parked := r.jobID, r.live(), r.state == "RUNNING", r.parked
	r.parked = nil
	s.mu.Unlock()
	if !live {
		return nil
	}
	switch {
	case parked != nil:
		s.shutdownOn(ctx, parked, "stopped")
	case s.Shutdown != nil && s.Shutdown(ctx, user) == nil:
	case running:
		if err := s.callLocal(ctx, user, protocol.MethodCancelJob, protocol.CancelJobParams{JobID: job, Signal: "TERM"}, nil); err != nil {
			s.log().Warn("graceful stop of the job failed; cancelling it", "user", user, "job", job, "err", err)
		}
	default: // queued: nothing runs to let finish
		return s.callLocal(ctx, user, protocol.MethodCancelJob, protocol.CancelJobParams{JobID: job}, nil)
	}
	grace, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if s.waitEnded(grace, user, job) {
		return nil
	}
	return s.callLocal(ctx, user, protocol.MethodCancelJob, protocol.CancelJobParams{JobID: job}, nil)
}

// shutdownOn asks the executor on c to shut down, and closes c.
func (s *Slurm) shutdownOn(ctx context.Context, c net.Conn, reason string) {
	cl := rpc.NewClient(c, nil, rpc.Options{Logger: s.log()})
	defer cl.Close()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_ = cl.Call(sctx, protocol.MethodShutdown, protocol.ShutdownParams{Reason: reason, TimeoutMS: 10_000}, nil)
}

func (s *Slurm) waitEnded(ctx context.Context, user, job string) bool {
	for {
		s.mu.Lock()
		r := s.remoteLocked(user)
		ended, changed := r.jobID != job || !r.live(), r.changed
		s.mu.Unlock()
		if ended {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// Alive: the person's job has not ended (the pid is on a node, not here).
func (s *Slurm) Alive(user string, _ int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.users[user]
	return r != nil && r.live()
}

// List reports each person's current job.
func (s *Slurm) List(context.Context) ([]executorunit.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []executorunit.Status
	for user, r := range s.users {
		if r.jobID == "" {
			continue
		}
		out = append(out, executorunit.Status{User: user, Socket: "dial-back", Service: serviceState(r.state), JobID: r.jobID, Node: r.node, JobState: r.state})
	}
	return out, nil
}

// serviceState maps a job state onto the unit states the daemon knows.
func serviceState(job string) string {
	switch {
	case job == "RUNNING" || job == "COMPLETING":
		return "active"
	case !(slurm.Job{State: job}).Ended():
		return "activating"
	case job == "COMPLETED":
		return "inactive"
	}
	return "failed"
}

// Watch follows every user's jobs with one squeue per poll interval, and
// tells idle dialled-back executors to shut down, until ctx ends.
func (s *Slurm) Watch(ctx context.Context, fn func(executorunit.UnitChange)) error {
	s.mu.Lock()
	s.emit = fn
	s.started = time.Now()
	s.mu.Unlock()
	s.recovered.Do(s.recover)
	t := time.NewTicker(time.Duration(s.Config.PollMS) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		s.poll(ctx)
		s.shutdownIdle(ctx)
	}
}

// recover takes up the jobs a previous daemon left running (their tokens
// are in the registry); their executors dial this daemon again.
func (s *Slurm) recover() {
	// A person can have two bound jobs at a restart: one just ended
	// (scancel; no poll had revoked its token yet) and the one submitted
	// in its place. The newest is hers; taking whichever the registry's
	// map gave first once kept the ended one, refused the live one's
	// dial-back and submitted a third. The older tokens are revoked: a
	// dial-back on them would be refused as not her current job anyway.
	newest := map[string]dialback.Job{}
	var older []string
	for _, j := range s.Jobs.List() {
		if j.JobID == "" {
			continue
		}
		cur, ok := newest[j.User]
		switch {
		case !ok:
			newest[j.User] = j
		case j.Issued.After(cur.Issued):
			older, newest[j.User] = append(older, cur.JobID), j
		default:
			older = append(older, j.JobID)
		}
	}
	s.mu.Lock()
	for user, j := range newest {
		if r := s.remoteLocked(user); r.jobID == "" {
			r.jobID, r.node, r.state = j.JobID, j.Node, "RUNNING"
		}
	}
	s.mu.Unlock()
	for _, id := range older {
		if err := s.Jobs.Revoke(id); err != nil {
			s.log().Warn("revoking a replaced job's token", "job", id, "err", err)
		}
	}
}

// shutdownIdle tells executors whose dial-back nobody took for the idle
// time to shut down: their job then ends (COMPLETED).
func (s *Slurm) shutdownIdle(ctx context.Context) {
	if s.IdleTimeout <= 0 {
		return
	}
	var idle []net.Conn
	s.mu.Lock()
	for _, r := range s.users {
		if r.parked != nil && time.Since(r.parkedAt) > s.IdleTimeout {
			idle = append(idle, r.parked)
			r.parked = nil
		}
	}
	s.mu.Unlock()
	for _, c := range idle {
		go s.shutdownOn(ctx, c, "idle")
	}
}

// releasing frees the job's registry slot when the connection closes, so
// that the job may dial again (a daemon restart, a dropped link).
type releasing struct {
	net.Conn
	once    sync.Once
	release func()
}

func (r *releasing) Close() error {
	err := r.Conn.Close()
	r.once.Do(r.release)
	return err
}

// Usage is Slurm's to count, on the node: sstat reads it only where job
// accounting is gathered (JobAcctGatherType), which many sites leave off,
// and a command per job per read is what the watch avoids. Said, not
// guessed.
func (s *Slurm) Usage(_ context.Context, users []string) (map[string]executorunit.Usage, error) {
	const why = ": counted by Slurm on the job's node (sstat, where job accounting is gathered), not read by the daemon"
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]executorunit.Usage{}
	for _, u := range users {
		if r := s.users[u]; r != nil && r.live() {
			out[u] = executorunit.Usage{Source: "slurm", Unavailable: []string{"cpu" + why, "memory" + why, "tasks" + why, "io" + why}}
		}
	}
	return out, nil
}
