// Package procexec serves the executor's exec method: run an argv as the
// executor's user, without a shell, stream its output as ordered
// exec_output notifications, and kill its whole process group on timeout
// or cancellation.
package procexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/executor/childenv"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/executor/gitguard"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ChunkSize bounds one exec_output notification's data: a slow daemon
// blocks the sender, which stops reading the pipe, which stalls the
// process - no buffer grows without bound.
const ChunkSize = 32 << 10

// KillGrace is how long a process group has between SIGTERM and SIGKILL.
const KillGrace = 2 * time.Second

// Holder keeps the executor alive while a process runs (executor.Server).
type Holder interface {
	Hold() (release func())
}

// Service runs processes with working directories beneath root.
type Service struct {
	Root *fsroot.Root
	Hold Holder
	// Sandbox confines commands that ask for it (nil: only "off").
	Sandbox *sandbox.Policy
}

// Register adds exec to m.
func (s *Service) Register(m *rpc.Mux) { m.Register(protocol.MethodExec, s.handle) }

func (s *Service) handle(ctx context.Context, r *rpc.Request) (any, error) {
	var p protocol.ExecParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	return s.run(ctx, r.Conn, p)
}

func (s *Service) run(ctx context.Context, conn *rpc.Conn, p protocol.ExecParams) (protocol.ExecResult, error) {
	if s.Hold != nil {
		defer s.Hold.Hold()()
	}
	dir, err := s.Root.OpenDir(p.Cwd)
	if err != nil {
		return protocol.ExecResult{}, fsroot.WireErr("cwd", err)
	}
	defer dir.Close()
	spec, applied, err := s.confine(p, dir)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	defer spec.Cleanup()
	guard := guardGit(spec)
	if p.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	cmd, outs, err := start(p, dir, spec)
	if err != nil {
		return protocol.ExecResult{}, rpc.Errorf(rpc.CodeInternalError, "exec_failed", "start %s: %v", p.Argv[0], err)
	}
	stopKiller := KillOnDone(ctx, cmd)
	streamOutputs(conn, p.ExecID, outs)
	waitErr := cmd.Wait()
	stopKiller()
	res, err := result(ctx, cmd, waitErr)
	applied.Undone = s.restoreGit(guard)
	if applied.Level != string(sandbox.Off) {
		res.Sandbox = &applied
	}
	return res, err
}

// confine is the sandbox the request's level gets, beneath its cwd.
func (s *Service) confine(p protocol.ExecParams, dir *os.File) (sandbox.Spec, protocol.SandboxInfo, error) {
	cwd, err := sandbox.DirPath(dir)
	if err != nil {
		return sandbox.Spec{}, protocol.SandboxInfo{}, rpc.Errorf(rpc.CodeInternalError, "exec_failed", "cwd: %v", err)
	}
	spec, applied, err := s.Sandbox.For(p.Sandbox, cwd, s.Root.Path(), nil)
	if err != nil {
		return spec, applied, sandbox.Error(err)
	}
	return spec, applied, nil
}

// start runs argv in the directory opened beneath the root, under spec:
// the child changes into it through its /proc/self/fd link before exec,
// so no path is looked up twice.
func start(p protocol.ExecParams, dir *os.File, spec sandbox.Spec) (*exec.Cmd, [2]io.ReadCloser, error) {
	argv := spec.Command(p.Argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))
	cmd.Env = spec.Env(childenv.Build(os.Environ(), p.Env))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = KillGrace // a grandchild holding the pipes cannot hold up Wait
	if p.Stdin != nil {
		cmd.Stdin = bytes.NewReader(p.Stdin)
	}
	var outs [2]io.ReadCloser
	var err error
	if outs[0], err = cmd.StdoutPipe(); err != nil {
		return nil, outs, err
	}
	if outs[1], err = cmd.StderrPipe(); err != nil {
		return nil, outs, err
	}
	return cmd, outs, cmd.Start()
}

// KillOnDone ends the whole process group when ctx ends: SIGTERM, then
// SIGKILL after KillGrace. The returned func stops watching.
func KillOnDone(ctx context.Context, cmd *exec.Cmd) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(KillGrace):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // also any straggler in the group
	}()
	return func() { close(done); wg.Wait() }
}

// streamOutputs sends both pipes as ordered notifications until both end.
func streamOutputs(conn *rpc.Conn, id string, outs [2]io.ReadCloser) {
	var mu sync.Mutex // one sequence across both streams, in send order
	var seq int64
	var wg sync.WaitGroup
	for i, name := range []string{"stdout", "stderr"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, ChunkSize)
			for {
				n, err := outs[i].Read(buf)
				if n > 0 {
					mu.Lock()
					_ = conn.Notify(protocol.MethodExecOutput, protocol.ExecOutput{ExecID: id, Stream: name, Seq: seq, Data: buf[:n]})
					seq++
					mu.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

func result(ctx context.Context, cmd *exec.Cmd, waitErr error) (protocol.ExecResult, error) {
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return protocol.ExecResult{}, fmt.Errorf("wait: %w", waitErr)
	}
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res := protocol.ExecResult{ExitCode: st.ExitStatus()}
	if st.Signaled() {
		res.ExitCode, res.Signal = -1, st.Signal().String()
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.TimedOut = true
	case errors.Is(ctx.Err(), context.Canceled):
		return res, ctx.Err() // answered as "request cancelled"
	}
	return res, nil
}

// guardGit snapshots the hooks and config of the repository a workspace
// holds, which the confined command may write but git runs later outside
// the sandbox (gitguard); nil at any other level.
func guardGit(spec sandbox.Spec) *gitguard.Guard {
	if spec.Level != sandbox.Workspace {
		return nil
	}
	if spec.Namespaces { // the view held what exists of sandbox.Protected
		return gitguard.SnapshotView(spec.Cwd, sandbox.Protected)
	}
	return gitguard.Snapshot(spec.Cwd)
}

// restoreGit puts them back once the command's process group is gone and
// says what it undid.
func (s *Service) restoreGit(g *gitguard.Guard) []string {
	undone, err := g.Restore()
	if len(undone) > 0 || err != nil {
		slog.Warn("confined work changed the repository's hooks or config, or left what runs later: put back or disabled", "undone", undone, "err", err)
	}
	return undone
}
