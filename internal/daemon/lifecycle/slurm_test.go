package lifecycle

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/slurm"
)

// submitter is the person's local executor as Slurm uses it: every
// Ensure is a submission on its way (sbatch goes through it), and none
// is served.
type submitter struct {
	executorunit.Backend
	ensured []string
}

func (b *submitter) Ensure(_ context.Context, user string) (executorunit.Executor, error) {
	b.ensured = append(b.ensured, user)
	return executorunit.Executor{}, errors.New("no local executor in this test")
}

// TestSlurmRecoversBeforeFirstRequest: a restarted daemon whose first
// call is a request, not Watch, takes up the job its predecessor left
// running (the registry names it) instead of submitting a second: the
// Slurm suite once saw job 6 before a restart and 7 after.
func TestSlurmRecoversBeforeFirstRequest(t *testing.T) {
	name, uid := exectest.Target(t)
	path := filepath.Join(t.TempDir(), "jobs.json")
	before, err := dialback.OpenJobs(path)
	if err != nil {
		t.Fatal(err)
	}
	token, err := before.Issue(name, uint32(uid))
	if err != nil {
		t.Fatal(err)
	}
	if err := before.Bind(token, "6"); err != nil {
		t.Fatal(err)
	}
	jobs, err := dialback.OpenJobs(path) // the next daemon's registry
	if err != nil {
		t.Fatal(err)
	}
	local := &submitter{}
	s := &Slurm{Policy: executorunit.Policy{MinUID: 1}, Local: local, Jobs: jobs}
	if _, err := s.Ensure(context.Background(), name); err != nil {
		t.Fatalf("Ensure with job 6 running: %v", err)
	}
	if len(local.ensured) != 0 {
		t.Fatalf("a second job was submitted for %s beside job 6", name)
	}
}

// TestSlurmRecoversNewestJob: a daemon restarted just after a scancel
// finds two bound jobs for the person (the cancelled one, its token not
// yet revoked by a poll, and its replacement) and takes up the newest,
// revoking the other; the Slurm suite saw job 6 before a restart and 7
// after when it took the cancelled job 5 (a map's order: each try below
// is a new registry and a new daemon).
func TestSlurmRecoversNewestJob(t *testing.T) {
	name, uid := exectest.Target(t)
	path := filepath.Join(t.TempDir(), "jobs.json")
	for try := range 20 {
		before, err := dialback.OpenJobs(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"5", "6"} {
			token, err := before.Issue(name, uint32(uid))
			if err != nil {
				t.Fatal(err)
			}
			if err := before.Bind(token, id); err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := dialback.OpenJobs(path) // the next daemon's registry
		if err != nil {
			t.Fatal(err)
		}
		s := &Slurm{Jobs: jobs}
		s.recover()
		if got := s.users[name].jobID; got != "6" {
			t.Fatalf("try %d: the restarted daemon took up job %s, want 6 (the newest)", try, got)
		}
		if left := jobs.List(); len(left) != 1 || left[0].JobID != "6" {
			t.Fatalf("try %d: tokens left after recovery: %+v, want job 6's only", try, left)
		}
		if err := jobs.Revoke("6"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlurmPollSubmittedDuringQueue: a job submitted while a poll's
// squeue runs is not in what it returns, and is not taken for gone (a
// prompt once failed so: "job 8 is GONE", submitted a moment before).
func TestSlurmPollSubmittedDuringQueue(t *testing.T) {
	jobs, err := dialback.OpenJobs("")
	if err != nil {
		t.Fatal(err)
	}
	s := &Slurm{Jobs: jobs}
	s.Queue = func(context.Context) ([]slurm.Job, error) {
		s.submitted("bob", "8") // sbatch returned while squeue ran
		return nil, nil
	}
	s.poll(context.Background())
	if st := s.users["bob"].state; st != "PENDING" {
		t.Fatalf("job 8, submitted during the poll's squeue, is %s after it", st)
	}
	s.Queue = func(context.Context) ([]slurm.Job, error) { return nil, nil }
	s.poll(context.Background())
	if st := s.users["bob"].state; st != "GONE" {
		t.Fatalf("job 8, missing from the next squeue, is %s, want GONE", st)
	}
}
