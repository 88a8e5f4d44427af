package terminal

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/executor/gitguard"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// How a terminal's shell starts: confined or not, on a new PTY, and what
// follows its end.

// cleanupOf is what follows a terminal's end: under workspace, what its
// shell left in the workspace that runs later unasked is disabled and
// logged (gitguard); then the spec's temp directory goes.
func (s *Service) cleanupOf(id string, spec sandbox.Spec) func() {
	if spec.Level != sandbox.Workspace {
		return spec.Cleanup
	}
	var guard *gitguard.Guard
	if spec.Namespaces {
		guard = gitguard.SnapshotView(spec.Cwd, sandbox.Protected)
	} else {
		guard = gitguard.Snapshot(spec.Cwd)
	}
	return func() {
		if undone, err := guard.Restore(); len(undone) > 0 || err != nil {
			s.cfg.Logger.Warn("a confined terminal left what would run later outside the sandbox: disabled", "terminal_id", id, "undone", undone, "err", err)
		}
		spec.Cleanup()
	}
}

// command is the login shell (argv[0] "-bash", as ssh starts it), through
// the sandbox launcher when the request's level confines it.
func (s *Service) command(shell, level string, dir *os.File) (*exec.Cmd, sandbox.Spec, protocol.SandboxInfo, error) {
	argv0 := "-" + filepath.Base(shell)
	cwd, err := sandbox.DirPath(dir)
	if err != nil {
		return nil, sandbox.Spec{}, protocol.SandboxInfo{}, rpc.Errorf(rpc.CodeInternalError, "spawn_failed", "cwd: %v", err)
	}
	spec, applied, err := s.cfg.Sandbox.For(level, cwd, s.acct.home, nil)
	if err != nil {
		return nil, spec, applied, sandbox.Error(err)
	}
	if spec.Level == sandbox.Off {
		cmd := exec.Command(shell)
		cmd.Args[0] = argv0
		return cmd, spec, applied, nil
	}
	spec.Argv0 = argv0
	argv := spec.Command([]string{shell})
	return exec.Command(argv[0], argv[1:]...), spec, applied, nil
}

// startPTY starts cmd on a new PTY of the given size and returns the
// master side, made pollable: creack/pty hands it back in blocking mode,
// where a pending Read could never be interrupted.
func startPTY(cmd *exec.Cmd, cols, rows int) (*os.File, error) {
	ws := &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}
	f, err := pty.StartWithAttrs(cmd, ws, &syscall.SysProcAttr{Setsid: true, Setctty: true})
	if err != nil {
		return nil, err
	}
	master, err := pollable(f)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return master, nil
}

func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}
