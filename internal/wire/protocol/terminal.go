package protocol

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// MaxTerminalSize bounds cols and rows.
const MaxTerminalSize = 1000

// SpawnTerminalParams starts a login shell (or Shell) on a new PTY. No
// session token: see StopTaskParams.
type SpawnTerminalParams struct {
	Cwd     string            `json:"cwd"`
	Shell   string            `json:"shell,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cols    int               `json:"cols"`
	Rows    int               `json:"rows"`
	Sandbox string            `json:"sandbox,omitempty"` // SandboxOff...
}

// Validate checks the fields; the executor also refuses variables it
// keeps for itself.
func (p SpawnTerminalParams) Validate() error {
	if err := checkSize(p.Cols, p.Rows); err != nil {
		return err
	}
	if strings.ContainsRune(p.Shell, 0) {
		return rpc.InvalidParams("shell", "contains NUL")
	}
	if err := ValidSandbox(p.Sandbox); err != nil {
		return err
	}
	return CheckEnv(p.Env)
}

// envName is what a portable environment variable name looks like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv checks the names and values of variables a caller asks for.
func CheckEnv(env map[string]string) error {
	for k, v := range env {
		if !envName.MatchString(k) {
			return rpc.InvalidParams("env", "invalid variable name "+strconv.Quote(k))
		}
		if strings.ContainsRune(v, 0) {
			return rpc.InvalidParams("env", "value of "+k+" contains NUL")
		}
	}
	return nil
}

func checkSize(cols, rows int) error {
	switch {
	case cols < 1 || cols > MaxTerminalSize:
		return rpc.InvalidParams("cols", "must be 1..1000")
	case rows < 1 || rows > MaxTerminalSize:
		return rpc.InvalidParams("rows", "must be 1..1000")
	}
	return nil
}

// SpawnTerminalResult names the new terminal.
type SpawnTerminalResult struct {
	TerminalID string       `json:"terminal_id"`
	PID        int          `json:"pid"`
	Sandbox    *SandboxInfo `json:"sandbox,omitempty"`
}

// TerminalIDParams names a terminal: attach_terminal, terminate_terminal.
type TerminalIDParams struct {
	TerminalID string `json:"terminal_id"`
}

// Validate checks the fields.
func (p TerminalIDParams) Validate() error {
	if p.TerminalID == "" {
		return rpc.InvalidParams("terminal_id", "required")
	}
	return nil
}

// TerminalInputParams is the terminal_input notification: keystrokes.
type TerminalInputParams struct {
	TerminalID string `json:"terminal_id"`
	Data       []byte `json:"data"` // base64 on the wire
}

// ResizeTerminalParams resizes a terminal.
type ResizeTerminalParams struct {
	TerminalID string `json:"terminal_id"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
}

// Validate checks the fields.
func (p ResizeTerminalParams) Validate() error {
	if p.TerminalID == "" {
		return rpc.InvalidParams("terminal_id", "required")
	}
	return checkSize(p.Cols, p.Rows)
}

// ResizeTerminalResult is resize_terminal's (empty) reply.
type ResizeTerminalResult struct{}

// TerminateTerminalResult says whether a live terminal was ended.
type TerminateTerminalResult struct {
	Terminated bool `json:"terminated"`
}

// AttachTerminalResult is the recent output; everything from Seq on
// arrives as terminal_output on the attaching connection.
type AttachTerminalResult struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	Scrollback []byte `json:"scrollback"` // base64 on the wire
	Seq        int64  `json:"seq"`        // of the next terminal_output
}

// TerminalInfo describes one terminal in list_terminals.
type TerminalInfo struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	Attached   bool   `json:"attached"`
}

// ListTerminalsResult lists the executor's terminals.
type ListTerminalsResult struct {
	Terminals []TerminalInfo `json:"terminals"`
}

// TerminalOutput is one terminal_output notification. Seq counts a
// terminal's chunks from 0, including those only the scrollback saw.
type TerminalOutput struct {
	TerminalID string `json:"terminal_id"`
	Seq        int64  `json:"seq"`
	Data       []byte `json:"data"` // base64 on the wire
}

// TerminalExit is the terminal_exit notification, after the last output.
type TerminalExit struct {
	TerminalID string `json:"terminal_id"`
	ExitCode   int    `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
}

// AttachTerminalRawParams asks, as the first request on a fresh
// connection to the executor, for terminal_id's bytes on that connection:
// after the reply, the executor writes the terminal's output there, from
// Offset on (or the oldest byte of the scrollback, if later), and takes
// what it reads as keystrokes. Resize, terminate and terminal_exit stay
// on the JSON-RPC connection that spawned or attached the terminal.
type AttachTerminalRawParams struct {
	TerminalID string `json:"terminal_id"`
	// Offset counts the terminal's output bytes from 0: a reattaching
	// caller passes how much it has already seen; 0 replays all the
	// scrollback.
	Offset int64 `json:"offset,omitempty"`
	// Handoff: after the reply, the caller passes the API client's own
	// connection (SCM_RIGHTS, with a RawHandoff header) and the executor
	// serves the client itself: the 101 reply, then the API's raw frames
	// (rawframe.Upgrade) both ways, resize and terminate
	// included, with no relay between. It reports on this connection
	// with RawHandoffStatus lines.
	Handoff bool `json:"handoff,omitempty"`
}

// RawHandoffStatus is a line the executor writes on a handoff's
// connection: Upgraded once the client has its 101 reply, then Ended
// (why the client's stream ended: "exit", "detached", "client_gone",
// "replaced") when the executor has let the client's connection go; an
// Error instead when the client could not be served, before any reply
// reached it. The caller answers the client only after an Error, or when
// the connection ends without Ended (the executor died).
type RawHandoffStatus struct {
	Upgraded bool       `json:"upgraded,omitempty"`
	Ended    string     `json:"ended,omitempty"`
	Error    *rpc.Error `json:"error,omitempty"`
}

// RawHandoffMax bounds the client bytes a handoff carries along (what the
// caller had read past the client's request).
const RawHandoffMax = 64 << 10

// Validate checks the fields.
func (p AttachTerminalRawParams) Validate() error {
	if p.TerminalID == "" {
		return rpc.InvalidParams("terminal_id", "required")
	}
	if p.Offset < 0 {
		return rpc.InvalidParams("offset", "must not be negative")
	}
	return nil
}

// AttachTerminalRawResult is attach_terminal_raw's reply: the raw bytes
// that follow it start at Offset (later than asked when the scrollback no
// longer reaches back that far); End is how much output there was when
// the reply was written, so End-Offset bytes of replay come first.
type AttachTerminalRawResult struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	Offset     int64  `json:"offset"`
	End        int64  `json:"end"`
}
