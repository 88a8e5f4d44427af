package protocol

import (
	"strings"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// The slurm backend's submissions, made by the user's own executor on the
// login host so that the job is hers without root or sudo anywhere: only
// root may sbatch --uid, and a SlurmUser token is an administrator's key.
const (
	MethodSubmitJob = "submit_job"
	MethodCancelJob = "cancel_job"
)

// SubmitJobParams is one sbatch: the script on its stdin, the options as
// named fields (never free-form flags).
type SubmitJobParams struct {
	Script    string `json:"script"`
	JobName   string `json:"job_name"`
	Partition string `json:"partition,omitempty"`
	TimeLimit string `json:"time_limit,omitempty"` // sbatch --time, e.g. "8:00:00"
	Memory    string `json:"memory,omitempty"`     // sbatch --mem, e.g. "4G"
	CPUs      int    `json:"cpus,omitempty"`       // --cpus-per-task
	Signal    string `json:"signal,omitempty"`     // --signal, e.g. "B:USR1@300"
	Output    string `json:"output,omitempty"`     // --output; "" is /dev/null
}

// Validate checks the fields: each option one word, so none can smuggle
// another flag or a line into the script.
func (p SubmitJobParams) Validate() error {
	if !strings.HasPrefix(p.Script, "#!") {
		return rpc.InvalidParams("script", "must start with #!")
	}
	if len(p.Script) > 64<<10 {
		return rpc.InvalidParams("script", "longer than 64 KiB")
	}
	if p.CPUs < 0 {
		return rpc.InvalidParams("cpus", "must not be negative")
	}
	for _, f := range []struct{ name, v string }{
		{"job_name", p.JobName}, {"partition", p.Partition}, {"time_limit", p.TimeLimit},
		{"memory", p.Memory}, {"signal", p.Signal}, {"output", p.Output},
	} {
		if strings.ContainsAny(f.v, " \t\r\n\x00") || len(f.v) > 256 {
			return rpc.InvalidParams(f.name, "must be one word of at most 256 bytes")
		}
	}
	if p.JobName == "" {
		return rpc.InvalidParams("job_name", "required")
	}
	return nil
}

// SubmitJobResult names the submitted job.
type SubmitJobResult struct {
	JobID string `json:"job_id"`
}

// CancelJobParams is one scancel of the user's job; Signal "" cancels it,
// otherwise the signal goes to the batch step only (the executor), e.g.
// TERM for a graceful stop.
type CancelJobParams struct {
	JobID  string `json:"job_id"`
	Signal string `json:"signal,omitempty"`
}

// Validate checks the fields.
func (p CancelJobParams) Validate() error {
	if p.JobID == "" || strings.Trim(p.JobID, "0123456789") != "" || len(p.JobID) > 20 {
		return rpc.InvalidParams("job_id", "must be a job number")
	}
	if p.Signal != "" && strings.Trim(p.Signal, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return rpc.InvalidParams("signal", "must be a signal name such as TERM")
	}
	return nil
}

// CancelJobResult is cancel_job's (empty) reply.
type CancelJobResult struct{}
