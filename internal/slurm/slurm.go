// Package slurm runs the Slurm commands the slurm backend needs, and
// reads their answers: sbatch and scancel as the user (her own executor
// on the login host runs them, so the job is hers and nobody holds root
// or a SlurmUser key), squeue once for every user's job at a time (the
// daemon's watch: never a command per user per poll).
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// Commands names the binaries ("" : found on PATH by their usual names).
type Commands struct {
	Sbatch, Scancel, Squeue string
}

func (c Commands) path(name, given string) string {
	if given != "" {
		return given
	}
	return name
}

// Submit runs sbatch --parsable with the script on stdin and returns the
// job id. The job starts in the user's home directory.
func (c Commands) Submit(ctx context.Context, p protocol.SubmitJobParams) (string, error) {
	args := []string{"--parsable", "--job-name=" + p.JobName, "--output=" + or(p.Output, "/dev/null")}
	if home, err := os.UserHomeDir(); err == nil {
		args = append(args, "--chdir="+home)
	}
	for _, o := range []struct{ flag, v string }{
		{"--partition=", p.Partition}, {"--time=", p.TimeLimit}, {"--mem=", p.Memory}, {"--signal=", p.Signal},
	} {
		if o.v != "" {
			args = append(args, o.flag+o.v)
		}
	}
	if p.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(p.CPUs))
	}
	out, err := c.run(ctx, c.path("sbatch", c.Sbatch), args, p.Script)
	if err != nil {
		return "", err
	}
	return ParseSubmitted(out)
}

// ParseSubmitted reads sbatch --parsable's "ID" or "ID;CLUSTER".
func ParseSubmitted(out string) (string, error) {
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", fmt.Errorf("sbatch answered %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// Cancel runs scancel on the user's job: with a signal, to the batch step
// only (the executor, which stops gracefully); without, the job ends.
func (c Commands) Cancel(ctx context.Context, jobID, signal string) error {
	args := []string{jobID}
	if signal != "" {
		args = []string{"--batch", "--signal=" + signal, jobID}
	}
	_, err := c.run(ctx, c.path("scancel", c.Scancel), args, "")
	return err
}

// Job is one line of the queue.
type Job struct {
	ID, User, State, Node, Reason string
}

// Ended: the job will not run (again).
func (j Job) Ended() bool {
	switch j.State {
	case "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT":
		return false
	}
	return true
}

// queueFormat: id, user, state, node list, reason; '|' never occurs in them.
const queueFormat = "%i|%u|%T|%N|%r"

// Queue lists every user's jobs of this name that the controller still
// knows, ended ones included (for MinJobAge): one squeue for all.
func (c Commands) Queue(ctx context.Context, name string) ([]Job, error) {
	out, err := c.run(ctx, c.path("squeue", c.Squeue),
		[]string{"--noheader", "--states=all", "--name=" + name, "--format=" + queueFormat}, "")
	if err != nil {
		return nil, err
	}
	return ParseQueue(out)
}

// ParseQueue reads squeue lines in queueFormat.
func ParseQueue(out string) ([]Job, error) {
	var jobs []Job
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 || f[0] == "" {
			return nil, fmt.Errorf("squeue line %q: want 5 fields", line)
		}
		jobs = append(jobs, Job{ID: f[0], User: f[1], State: f[2], Node: f[3], Reason: f[4]})
	}
	return jobs, nil
}

// run runs a Slurm command with a clean environment and says what it said
// when it fails.
func (c Commands) run(ctx context.Context, bin string, args []string, stdin string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + os.Getenv("HOME"), "USER=" + os.Getenv("USER")}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return "", fmt.Errorf("%s: %s", bin, msg)
		}
		return "", fmt.Errorf("%s: %w", bin, err)
	}
	return stdout.String(), nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
