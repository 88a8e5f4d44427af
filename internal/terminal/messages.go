package terminal

import "github.com/agor-sh/agor/internal/rpc"

// SpawnParams of spawn_terminal.
type SpawnParams struct {
	SessionToken string            `json:"session_token"`
	Cwd          string            `json:"cwd"`
	Shell        string            `json:"shell,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Cols         int               `json:"cols"`
	Rows         int               `json:"rows"`
}

// Validate checks the fields.
func (p SpawnParams) Validate() error {
	if err := checkSize(p.Cols, p.Rows); err != nil {
		return err
	}
	if containsNUL(p.Shell) {
		return rpc.InvalidParams("shell", "contains NUL")
	}
	return checkEnv(p.Env)
}

// MaxSize bounds cols and rows.
const MaxSize = 1000

func checkSize(cols, rows int) error {
	switch {
	case cols < 1 || cols > MaxSize:
		return rpc.InvalidParams("cols", "must be 1..1000")
	case rows < 1 || rows > MaxSize:
		return rpc.InvalidParams("rows", "must be 1..1000")
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// SpawnResult of spawn_terminal.
type SpawnResult struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
}

// IDParams names a terminal: attach_terminal, terminate_terminal.
type IDParams struct {
	TerminalID string `json:"terminal_id"`
}

// Validate checks the fields.
func (p IDParams) Validate() error {
	if p.TerminalID == "" {
		return rpc.InvalidParams("terminal_id", "required")
	}
	return nil
}

// InputParams of the terminal_input notification.
type InputParams struct {
	TerminalID string `json:"terminal_id"`
	Data       []byte `json:"data"` // base64 on the wire
}

// ResizeParams of resize_terminal.
type ResizeParams struct {
	TerminalID string `json:"terminal_id"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
}

// Validate checks the fields.
func (p ResizeParams) Validate() error {
	if p.TerminalID == "" {
		return rpc.InvalidParams("terminal_id", "required")
	}
	return checkSize(p.Cols, p.Rows)
}

// TerminateResult of terminate_terminal.
type TerminateResult struct {
	Terminated bool `json:"terminated"`
}

// AttachResult of attach_terminal: the recent output, then everything
// from Seq on arrives as terminal_output on the attaching connection.
type AttachResult struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	Scrollback []byte `json:"scrollback"` // base64 on the wire
	Seq        int64  `json:"seq"`        // of the next terminal_output
}

// Info describes one terminal in list_terminals.
type Info struct {
	TerminalID string `json:"terminal_id"`
	PID        int    `json:"pid"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	Attached   bool   `json:"attached"`
}

// ListResult of list_terminals.
type ListResult struct {
	Terminals []Info `json:"terminals"`
}

// Output is one terminal_output notification. Seq counts a terminal's
// chunks from 0, including those only the scrollback saw.
type Output struct {
	TerminalID string `json:"terminal_id"`
	Seq        int64  `json:"seq"`
	Data       []byte `json:"data"` // base64 on the wire
}

// Exit is the terminal_exit notification, sent after the last output.
type Exit struct {
	TerminalID string `json:"terminal_id"`
	ExitCode   int    `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
}
