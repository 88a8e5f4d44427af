package task

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/door"
	"github.com/agor-sh/agor/internal/executor/terminal"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// An interactive task (ExecutePromptParams.Interactive) runs the agent's
// own terminal UI instead of a headless turn, with everything a headless
// turn gets: the credentials and environment of request, the relay's
// door open to its process tree, the sandbox of confine, the guard after
// it. Its UI runs on a terminal of the executor's terminal service, so it
// is attached, detached and reattached as any terminal is, and bounded
// as they are; the task ends when the UI exits. No warm agent: the UI is
// the person's, for as long as she keeps it.

// Terminals runs a program on a terminal (terminal.Service).
type Terminals interface {
	Run(cmd *exec.Cmd, cols, rows int) (*terminal.Program, error)
}

var _ Terminals = (*terminal.Service)(nil)

// runScreen runs p's agent UI to its exit.
func (s *Service) runScreen(ctx context.Context, h *host, p protocol.ExecutePromptParams, a agent.Adapter, req agent.Request, turn *door.Turn, floor sandbox.Level) protocol.ExecutePromptResult {
	ui, ok := a.(agent.TUI)
	if !ok || s.Terminals == nil {
		return failed(protocol.TaskAgentMissing, fmt.Sprintf("%s has no interactive session here", p.Tool))
	}
	// The UI resumes the agent's session, which a kept process of the
	// session holds (codex's UI: "this conversation is open in another
	// app"): that process goes first, and is waited for.
	if err := s.pool().stopNow(ctx, warmKey(p), "its session opened interactively"); err != nil {
		return s.result(ctx, agent.Result{}, err)
	}
	spec, box, err := s.confine(p, floor, &req)
	if err != nil {
		return failed(protocol.TaskSandbox, err.Error())
	}
	defer spec.Cleanup()
	if box != nil {
		h.Emit(sandboxEvent(*box))
	}
	s.rememberConfined(p, spec.Level)
	scr, err := ui.Screen(req)
	if err != nil {
		return failed(protocol.TaskAgentCrashed, err.Error())
	}
	if _, err := os.Stat(scr.Argv[0]); err != nil {
		return failed(protocol.TaskAgentMissing, fmt.Sprintf("%s is not installed (set its path in the executor's agent configuration)", scr.Argv[0]))
	}
	guard := guardGit(spec)
	ex, err := s.screen(ctx, h, p, req, scr, turn)
	restoreGit(h, guard)
	out := s.result(ctx, agent.Result{}, err)
	if err == nil {
		out = s.result(ctx, screenEnd(ex), nil)
	}
	out.Sandbox, out.Warnings = h.sandbox(box), h.warnings()
	if id := ui.ScreenSession(req, scr); id != "" {
		s.remember(p, id)
		out.AgentSessionID = id
	}
	s.log().Info("task ended", "task", p.TaskID, "agentic_tool", p.Tool, "status", out.Status, "interactive", true, "exit_code", ex.ExitCode)
	return out
}

// screen starts the UI on its terminal, says so (the terminal event:
// what the person attaches to), and waits for its exit; a stopped task
// hangs its terminal up.
func (s *Service) screen(ctx context.Context, h *host, p protocol.ExecutePromptParams, req agent.Request, scr agent.Screen, turn *door.Turn) (protocol.TerminalExit, error) {
	argv := scr.Argv
	if req.Wrap != nil {
		argv = req.Wrap(argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = req.Cwd, scr.Env
	prog, err := s.Terminals.Run(cmd, p.Interactive.Cols, p.Interactive.Rows)
	if err != nil {
		return protocol.TerminalExit{ExitCode: -1}, &agent.Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}
	}
	turn.Started(prog.PID)
	h.Emit(agent.Event{Type: protocol.EventTerminal, Data: map[string]any{"terminal_id": prog.ID, "pid": prog.PID}})
	select {
	case ex := <-prog.Exited:
		return ex, nil
	case <-ctx.Done():
		prog.Terminate()
		return <-prog.Exited, nil
	}
}

// screenEnd is how the UI's exit ends the task: completed when it exited
// 0, failed otherwise (a hang-up: it was left unattached too long).
func screenEnd(ex protocol.TerminalExit) agent.Result {
	switch {
	case ex.ExitCode == 0:
		return agent.Result{Status: protocol.StatusCompleted}
	case ex.Signal != "":
		return agent.Result{Status: protocol.StatusFailed, Err: &agent.Error{Code: protocol.TaskAgentCrashed,
			Message: "the agent's terminal UI was ended by " + ex.Signal + " (stopped, or left unattached too long)"}}
	}
	return agent.Result{Status: protocol.StatusFailed, Err: &agent.Error{Code: protocol.TaskAgentCrashed,
		Message: fmt.Sprintf("the agent's terminal UI exited with status %d", ex.ExitCode)}}
}

// stopNow stops the session's warm agent, if any, and waits until it,
// and any other of the session's processes stopped before, are gone.
func (w *warmPool) stopNow(ctx context.Context, key, why string) error {
	w.stopIf(key, why, func(*warmAgent) bool { return true })
	return w.exited(ctx, key)
}
