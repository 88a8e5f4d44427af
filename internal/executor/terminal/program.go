package terminal

import (
	"os/exec"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Program is a terminal whose program another part of the executor
// started for its own work (an agent's terminal UI, for a task): a
// terminal like any other to attach to, detach from and reattach to,
// bounded as they are (DetachGrace unattached, counted against
// MaxTerminals), whose owner learns its exit.
type Program struct {
	ID  string
	PID int
	// Exited receives the exit once, after the program's last output.
	Exited <-chan protocol.TerminalExit
	t      *term
}

// Terminate hangs up the program's session (SIGKILL after KillGrace).
func (p *Program) Terminate() { p.t.terminate() }

// Run starts cmd (its argv, Dir and Env already set: the caller has
// confined it as it needs) on a new PTY of cols×rows and serves it as a
// terminal. Nothing is attached yet, so its grace runs from the start:
// a program nobody attaches to within DetachGrace is terminated.
func (s *Service) Run(cmd *exec.Cmd, cols, rows int) (*Program, error) {
	if err := (&protocol.Interactive{Cols: cols, Rows: rows}).Validate(); err != nil {
		return nil, err
	}
	id, err := s.reserve()
	if err != nil {
		return nil, err
	}
	master, err := startPTY(cmd, cols, rows)
	if err != nil {
		s.unreserve(id)
		return nil, rpc.Errorf(rpc.CodeInternalError, "spawn_failed", "start %s: %v", cmd.Path, err)
	}
	s.cfg.Logger.Info("terminal started", "terminal_id", id, "pid", cmd.Process.Pid, "program", cmd.Path)
	t := s.newTerm(id, cmd, master, cols, rows, protocol.SandboxInfo{Level: "off"}, func() {})
	exit := make(chan protocol.TerminalExit, 1)
	t.exit = exit
	s.mu.Lock()
	s.terms[id] = t
	closing := s.closed
	s.mu.Unlock()
	t.mu.Lock()
	t.idleLocked()
	t.mu.Unlock()
	t.run(s.cfg.Hold, func() { s.unlist(id) }, s.wg.Done)
	if closing {
		t.terminate()
	}
	return &Program{ID: id, PID: cmd.Process.Pid, Exited: exit, t: t}, nil
}
