package api

import (
	"strings"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// sandboxLevel resolves a request's sandbox level against the
// configuration (the executor applies the same file again), refusing one
// not allowed; nil Sandbox: the request's own, or off.
func (s *Server) sandboxLevel(requested, cwd string) (string, error) {
	if err := protocol.ValidSandbox(requested); err != nil {
		return "", err
	}
	if s.Sandbox == nil {
		return requested, workspaceCwd(requested, cwd)
	}
	l, err := s.Sandbox.Resolve(requested)
	if err != nil {
		return "", rpc.InvalidParams("sandbox", err.Error())
	}
	return string(l), workspaceCwd(string(l), cwd)
}

// workspaceCwd refuses a workspace whose cwd is plainly the home directory
// (sandbox.PlainHome): a workspace is a project. The executor decides for
// every other path (sandbox.HomeWorkspace), knowing the home.
func workspaceCwd(level, cwd string) error {
	if level == string(sandbox.Workspace) && sandbox.PlainHome(cwd) {
		return rpc.InvalidParams("cwd", sandbox.ErrWorkspaceHome.Error())
	}
	return nil
}

// sandboxApplied makes a confinement the executor says it could not
// enforce loud: a journal warning and an audit record, not only a field
// in the reply (the record of the task's start names the level asked).
func (s *Server) sandboxApplied(ref audit.Record, got *protocol.SandboxInfo) {
	if got != nil && len(got.Undone) > 0 {
		s.sandboxUndone(ref, got.Undone)
	}
	if got == nil || got.Enforced || got.Level == string(sandbox.Off) && got.Warning == "" {
		return
	}
	s.log().Warn("sandbox not enforced", "user", ref.User, "task", ref.Task, "sandbox", got.Level, "warning", got.Warning)
	if s.Audit != nil {
		ref.Action, ref.Reason = audit.SandboxUnenforced, got.Warning
		if ref.Sandbox == "" {
			ref.Sandbox = got.Level
		}
		s.Audit.Log(ref)
	}
}

// sandboxUndone records what a confined exec or task left that would run
// later unconfined, and the executor disabled: a journal warning and an
// audit record beside the task's own report.
func (s *Server) sandboxUndone(ref audit.Record, undone []string) {
	what := strings.Join(undone, "; ")
	s.log().Warn("a confined task left what would run later; the executor disabled it", "user", ref.User, "task", ref.Task, "undone", what)
	if s.Audit != nil {
		ref.Action, ref.Reason = audit.SandboxUndone, what
		s.Audit.Log(ref)
	}
}
