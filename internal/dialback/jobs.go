// Package dialback is how an executor the daemon cannot reach reaches the
// daemon: one started as a Slurm job on a compute node, where there is no
// SO_PEERCRED across the network and other people's processes share the
// node, so it never listens. It dials the daemon's TLS listener (the
// daemon's CA pinned), presents its job's token in one hello line, and
// from then on the connection carries the executor protocol both ways, as
// a socket connection does.
//
// Jobs holds the tokens: 256-bit random values, kept only as SHA-256
// hashes, each bound to one user and one job, and revoked when the job
// ends. The file they are kept in (hashes only) lets a restarted daemon
// take its executors' dial-backs again.
package dialback

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/secret"
)

// Errors of Check; on the wire all are one refusal, the reason logged.
var (
	ErrUnknownToken = errors.New("unknown or revoked token")
	ErrWrongUser    = errors.New("token bound to another user")
	ErrWrongJob     = errors.New("token bound to another job")
	ErrConnected    = errors.New("the job's executor is already connected")
	ErrJobTaken     = errors.New("job bound to another token")
)

// Job is what one token is bound to.
type Job struct {
	User    string    `json:"user"`
	UID     uint32    `json:"uid"`
	JobID   string    `json:"job_id,omitempty"` // "" until the submission says or the first hello does
	Issued  time.Time `json:"issued"`
	Hash    string    `json:"hash"` // hex SHA-256 of the token
	Node    string    `json:"node,omitempty"`
	Present bool      `json:"-"` // a connection holds it now
}

// Jobs is the token registry. The zero value is not usable; use OpenJobs.
type Jobs struct {
	mu   sync.Mutex
	path string          // "" keeps nothing on disk
	jobs map[string]*Job // by hash
}

// OpenJobs loads the registry kept at path (absent: empty).
func OpenJobs(path string) (*Jobs, error) {
	j := &Jobs{path: path, jobs: map[string]*Job{}}
	if path == "" {
		return j, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	var list []*Job
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, job := range list {
		j.jobs[job.Hash] = job
	}
	return j, nil
}

// Issue makes a token for user's next job; Bind names the job once the
// submission returns its id.
func (j *Jobs) Issue(user string, uid uint32) (token string, err error) {
	if token, err = secret.New(); err != nil {
		return "", err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs[hash(token)] = &Job{User: user, UID: uid, Issued: time.Now(), Hash: hash(token)}
	return token, j.saveLocked()
}

// Bind binds token to jobID (the submission's answer).
func (j *Jobs) Bind(token, jobID string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.jobs[hash(token)]
	if !ok {
		return ErrUnknownToken
	}
	if job.JobID != "" && job.JobID != jobID {
		return ErrWrongJob
	}
	job.JobID = jobID
	return j.saveLocked()
}

// Check admits a hello: the token is live, bound to user and to jobID (a
// token not yet bound takes the job its first hello names: the job can
// start before sbatch has answered, but not a job another token holds),
// and no connection holds it. The caller passes the Job returned to
// Release when the connection ends.
func (j *Jobs) Check(token, user, jobID, node string) (Job, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.jobs[hash(token)]
	switch {
	case !ok:
		return Job{}, ErrUnknownToken
	case job.User != user:
		return Job{}, ErrWrongUser
	case job.JobID != "" && job.JobID != jobID:
		return Job{}, ErrWrongJob
	case job.JobID == "" && j.heldLocked(jobID, job.Hash):
		return Job{}, ErrJobTaken
	case job.Present:
		return Job{}, ErrConnected
	}
	job.JobID, job.Node, job.Present = jobID, node, true
	return *job, j.saveLocked()
}

// heldLocked says whether a token other than the one hashed self is
// bound to jobID.
func (j *Jobs) heldLocked(jobID, self string) bool {
	for h, job := range j.jobs {
		if h != self && job.JobID == jobID {
			return true
		}
	}
	return false
}

// Release marks the connection that Check admitted as job gone: that
// token's mark only, never another's that names the same job id. The
// token stays valid (a restarted daemon, or a dropped link, is dialled
// again).
func (j *Jobs) Release(job Job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if held, ok := j.jobs[job.Hash]; ok {
		held.Present = false
	}
}

// Revoke ends the job's token: its job ended, or was never started.
func (j *Jobs) Revoke(jobID string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for h, job := range j.jobs {
		if job.JobID == jobID {
			delete(j.jobs, h)
		}
	}
	return j.saveLocked()
}

// RevokeToken ends a token whose job id is not known (a failed submission).
func (j *Jobs) RevokeToken(token string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.jobs, hash(token))
	return j.saveLocked()
}

// List is every live token's job.
func (j *Jobs) List() []Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Job, 0, len(j.jobs))
	for _, job := range j.jobs {
		out = append(out, *job)
	}
	return out
}

// saveLocked writes the registry atomically (0600: hashes only, but no
// one else needs to know which jobs are ours).
func (j *Jobs) saveLocked() error {
	if j.path == "" {
		return nil
	}
	list := make([]*Job, 0, len(j.jobs))
	for _, job := range j.jobs {
		list = append(list, job)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(j.path), ".jobs-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), j.path)
}

func hash(token string) string {
	h := secret.Hash(token)
	return hex.EncodeToString(h[:])
}
