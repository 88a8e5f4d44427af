package protocol

// RevisionInteractive is the first revision whose executor runs a prompt
// with Interactive set as the agent CLI's own terminal UI on a PTY (a
// terminal of its terminal service, told by a terminal event). An
// executor below it would ignore the field and run a headless turn.
const RevisionInteractive = 5

// Interactive asks for the agent's own terminal UI instead of a headless
// turn: on a new PTY of this size, a terminal like spawn_terminal's
// (attach_terminal, detach, its grace), the task running until the UI
// exits. The prompt, when given, is the UI's first message.
type Interactive struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// Validate checks the size.
func (i *Interactive) Validate() error {
	if i == nil {
		return nil
	}
	return checkSize(i.Cols, i.Rows)
}

// EventTerminal is an interactive task's event once its agent's UI runs:
// {terminal_id, pid}; attach to the terminal to use it.
const EventTerminal = "terminal"
