package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// ExecParams runs a program (argv, no shell). ExecID, chosen by the
// caller, tags the exec_output notifications so concurrent execs can be
// told apart. No session token: see StopTaskParams.
type ExecParams struct {
	ExecID    string            `json:"exec_id"`
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env,omitempty"`
	Stdin     []byte            `json:"stdin,omitempty"` // base64 on the wire
	TimeoutMS int64             `json:"timeout_ms"`
	Sandbox   string            `json:"sandbox,omitempty"` // SandboxOff...
}

// Validate checks the fields.
func (p ExecParams) Validate() error {
	switch {
	case len(p.Argv) == 0 || p.Argv[0] == "":
		return rpc.InvalidParams("argv", "needs at least the program")
	case p.TimeoutMS < 0:
		return rpc.InvalidParams("timeout_ms", "must not be negative")
	}
	return ValidSandbox(p.Sandbox)
}

// ExecResult is the exit code, or the signal that ended the process.
type ExecResult struct {
	ExitCode int          `json:"exit_code"`
	Signal   string       `json:"signal,omitempty"`
	TimedOut bool         `json:"timed_out,omitempty"`
	Sandbox  *SandboxInfo `json:"sandbox,omitempty"`
}

// Streams of exec_output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ExecOutput is one exec_output notification.
type ExecOutput struct {
	ExecID string `json:"exec_id"`
	Stream string `json:"stream"` // stdout or stderr
	Seq    int64  `json:"seq"`
	Data   []byte `json:"data"` // base64 on the wire
}
