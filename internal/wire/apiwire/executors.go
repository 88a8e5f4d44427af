package apiwire

import "github.com/agor-sh/agor/internal/wire/protocol"

// ExecutorList is GET /v1/executors's reply.
type ExecutorList struct {
	Executors []ExecutorInfo `json:"executors"`
}

// ExecutorInfo is an executor as the API shows it.
type ExecutorInfo struct {
	User      string               `json:"user"`
	Socket    string               `json:"socket_state,omitempty"`
	Service   string               `json:"service_state,omitempty"`
	Connected bool                 `json:"connected"`
	Ping      *protocol.PingResult `json:"ping,omitempty"`
	Usage     *ExecutorUsage       `json:"usage,omitempty"` // running executors only
	Network   *ExecutorNetwork     `json:"network,omitempty"`
	// The slurm backend's: the executor's job, the node it runs on, and
	// its Slurm state (PENDING, RUNNING, ...).
	JobID    string `json:"job_id,omitempty"`
	Node     string `json:"node,omitempty"`
	JobState string `json:"job_state,omitempty"`
}

// ExecutorUsage is what an executor and everything it started use now,
// from systemd's counters for its unit (or, with the direct backend, its
// process tree in /proc). A null field is not known here; Unavailable
// says why ("memory: ...").
type ExecutorUsage struct {
	MemoryBytes  *uint64  `json:"memory_bytes"`
	CPUNSec      *uint64  `json:"cpu_usage_nsec"` // since the unit started
	Tasks        *uint64  `json:"tasks"`
	IOReadBytes  *uint64  `json:"io_read_bytes"`
	IOWriteBytes *uint64  `json:"io_write_bytes"`
	Source       string   `json:"source"` // "systemd", "proc", "systemd+proc" (memory and tasks from the process tree where systemd has no counter) or "slurm"
	Unavailable  []string `json:"unavailable,omitempty"`
}

// ExecutorNetwork is a person's network mode (open, proxy or none) and
// what their connections through the egress service moved since the
// daemon started.
type ExecutorNetwork struct {
	Mode      string `json:"mode,omitempty"`
	BytesUp   int64  `json:"bytes_up"`   // to destinations
	BytesDown int64  `json:"bytes_down"` // from them
	Allowed   int64  `json:"allowed"`    // connections and requests let through
	Denied    int64  `json:"denied"`     // refused by the policy
}
