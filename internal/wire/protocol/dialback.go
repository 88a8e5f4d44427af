package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// MethodHello is the first line an executor that dials back (one started
// as a Slurm job on a compute node) sends on its TLS connection to the
// daemon, before the connection carries the executor protocol as a socket
// connection does. A compute node has no SO_PEERCRED across the network:
// the job's token is what says who the executor is.
const MethodHello = "hello"

// HelloParams is the dial-back hello: the job's token (256-bit, the
// daemon keeps only its hash, bound to User and JobID), and where the
// executor runs.
type HelloParams struct {
	Token string `json:"token"`
	User  string `json:"user"`
	JobID string `json:"job_id"`
	Node  string `json:"node,omitempty"`
	PID   int    `json:"pid,omitempty"`
}

// Validate checks the fields.
func (p HelloParams) Validate() error {
	switch {
	case p.Token == "":
		return rpc.InvalidParams("token", "required")
	case len(p.Token) > 128:
		return rpc.InvalidParams("token", "longer than 128 bytes")
	case p.User == "":
		return rpc.InvalidParams("user", "required")
	case p.JobID == "":
		return rpc.InvalidParams("job_id", "required")
	}
	return nil
}

// HelloResult is the daemon's answer to an accepted hello.
type HelloResult struct {
	Accepted bool `json:"accepted"`
}
