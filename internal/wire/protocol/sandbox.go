package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// Sandbox levels a request may ask for (execute_prompt, exec,
// spawn_terminal); "" is the configured default.
const (
	SandboxOff       = "off"       // as the user may
	SandboxWorkspace = "workspace" // writes beneath cwd, the agent's state and temp only
	SandboxReadOnly  = "read-only" // writes to the agent's state and temp only
)

// ValidSandbox accepts "" and the three levels.
func ValidSandbox(level string) error {
	switch level {
	case "", SandboxOff, SandboxWorkspace, SandboxReadOnly:
		return nil
	}
	return rpc.InvalidParams("sandbox", "must be off, workspace or read-only")
}

// SandboxInfo says what confinement a process got: the level, the
// kernel's Landlock ABI, whether it was enforced, and why not when it was
// asked for and is not.
type SandboxInfo struct {
	Level    string `json:"level"`
	ABI      int    `json:"abi"`
	Enforced bool   `json:"enforced"`
	Warning  string `json:"warning,omitempty"`
	// View is "namespace" when the process's filesystem view was built
	// in a mount namespace of its own (everything read-only but its
	// writable paths; its project settings read-only), "" when Landlock
	// and the seccomp filter alone confine it.
	View string `json:"view,omitempty"`
	// Undone is what the executor put back after the confined process
	// ended: changes it made to .git/hooks or .git/config in its
	// workspace ("hooks/pre-commit added"), which git would run later
	// outside the sandbox.
	Undone []string `json:"undone,omitempty"`
}

// SocketHoldersParams asks an executor which of its person's processes
// hold a socket: the client end of a TCP connection to the daemon's API,
// by the inode the kernel's socket table gives.
type SocketHoldersParams struct {
	Inode uint64 `json:"inode"`
}

// SocketHoldersResult: how many processes hold it, and whether one of
// them is confined (a sandboxed task's): the daemon refuses the request
// then, as it does a confined caller on its Unix socket.
type SocketHoldersResult struct {
	Holders  int  `json:"holders"`
	Confined bool `json:"confined"`
}
