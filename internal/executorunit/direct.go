package executorunit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/unixsock"
)

// Direct runs executors itself, for development and hosts without
// systemd. It makes each user's listening socket and starts the executor
// with it exactly as systemd passes one (fd 3, LISTEN_FDS=1,
// LISTEN_FDNAMES=executor, LISTEN_PID of the executor), so the executor
// has one code path. Only as root can it run an executor as its user;
// otherwise executors run as the daemon's own account, and it says so.
type Direct struct {
	Policy Policy
	// Network names a person's network set: under proxy or none they
	// are refused (this backend cannot enforce it); nil: not checked.
	Network     NetworkFunc
	Binary      string        // path of agor-executor
	IdleTimeout time.Duration // passed to executors; 0 keeps their default
	Root        string        // passed as --root; "" leaves executors on the user's home
	Agents      string        // passed as --agents; "" leaves the executor's default
	Config      string        // passed as --config (the daemon's own file); "" leaves the executor's default
	Gateway     string        // passed as --gateway-socket; "" leaves the executor's default
	Log         *slog.Logger

	mu       sync.Mutex
	execs    map[string]*directExec
	warned   bool
	wg       sync.WaitGroup
	watchers map[*func(UnitChange)]struct{}
	// early are the changes before the first watcher: the daemon's API
	// may start an executor before its Watch goroutine has registered,
	// and that start must still reach the audit trail.
	early []UnitChange
}

// maxEarly bounds the changes kept for the first watcher.
const maxEarly = 1024

var _ Backend = (*Direct)(nil)

type directExec struct {
	ln   *net.UnixListener
	file *os.File // the listening socket, handed to each executor started
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// dying reports whether the executor has begun to exit (or is a zombie,
// or gone) and Wait has not reaped it yet. A killed process closes its
// descriptors (the daemon sees its connection drop) before it becomes a
// zombie, so the state letter alone would call it alive in between; the
// kernel's PF_EXITING flag is set before either.
func (e *directExec) dying() bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(e.cmd.Process.Pid) + "/stat")
	if err != nil {
		return true
	}
	return statExiting(b)
}

// pfExiting is PF_EXITING in the flags of /proc/PID/stat (linux/sched.h).
const pfExiting = 0x4

// statExiting reads /proc/PID/stat: state Z or X, or PF_EXITING in flags.
func statExiting(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(string(stat[i+1:])) // state ppid pgrp session tty tpgid flags ...
	if len(f) < 7 {
		return true
	}
	if f[0] == "Z" || f[0] == "X" {
		return true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err != nil || flags&pfExiting != 0
}

func (e *directExec) running() bool {
	if e.cmd == nil {
		return false
	}
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

// Ensure makes user's socket if needed and starts an executor on it when
// none runs (the last one may have exited when idle).
func (d *Direct) Ensure(ctx context.Context, name string) (Executor, error) {
	if err := HostOnly(name, "direct"); err != nil {
		return Executor{}, err
	}
	ex, err := d.Policy.Check(ctx, name)
	if err != nil {
		return Executor{}, err
	}
	if err := RefuseUnconfined(ctx, d.Network, "direct", name); err != nil {
		return Executor{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, err := d.entry(name, ex.Socket)
	if err != nil {
		return Executor{}, err
	}
	if !e.running() {
		if err := d.spawn(ctx, e, name); err != nil {
			return Executor{}, err
		}
	}
	return ex, nil
}

// entry is name's socket and executor, made if need be; one killed but
// not yet reaped is waited for (its socket would never be served), with
// d.mu let go meanwhile, as its end is told under it. Called and
// returning with d.mu held.
func (d *Direct) entry(name, socket string) (*directExec, error) {
	for {
		if d.execs == nil {
			d.execs = map[string]*directExec{}
		}
		e := d.execs[name]
		if e == nil {
			var err error
			if e, err = listen(socket); err != nil {
				return nil, err
			}
			d.execs[name] = e
		}
		if !e.running() || !e.dying() {
			return e, nil
		}
		done := e.done
		d.mu.Unlock()
		<-done
		d.mu.Lock()
	}
}

func listen(path string) (*directExec, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	ln, err := unixsock.Listen(path)
	if err != nil {
		return nil, err
	}
	f, err := ln.File()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &directExec{ln: ln, file: f}, nil
}

// spawn starts an executor for name on e's socket.
func (d *Direct) spawn(ctx context.Context, e *directExec, name string) error {
	cred, env, err := d.identity(ctx, name)
	if err != nil {
		return err
	}
	args := []string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, d.Binary, "--daemon-user", strconv.Itoa(os.Getuid())}
	if d.IdleTimeout > 0 {
		args = append(args, "--idle-timeout", d.IdleTimeout.String())
	}
	if d.Root != "" {
		args = append(args, "--root", d.Root)
	}
	if d.Agents != "" {
		args = append(args, "--agents", d.Agents)
	}
	if d.Config != "" {
		args = append(args, "--config", d.Config)
	}
	if d.Gateway != "" {
		args = append(args, "--gateway-socket", d.Gateway)
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(env, "LISTEN_FDS=1", "LISTEN_FDNAMES=executor")
	cmd.ExtraFiles = []*os.File{e.file}
	cmd.Stderr = os.Stderr
	// A session of its own, as systemd gives a service: no controlling
	// terminal. A daemon started from root's terminal would otherwise
	// pass that terminal on, and the user's work could push keystrokes
	// into root's shell with TIOCSTI.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start executor for %s: %w", name, err)
	}
	e.cmd, e.done = cmd, make(chan struct{})
	d.wg.Add(1)
	go func(done chan struct{}) {
		defer d.wg.Done()
		ev := UnitChange{User: name, Kind: "service", State: "inactive", Sub: "dead"}
		if err := cmd.Wait(); err != nil {
			ev.State, ev.Sub = "failed", "failed"
		}
		d.log().Info("executor exited", "user", name, "pid", cmd.Process.Pid, "status", cmd.ProcessState.String())
		// Its end is told before done closes: whoever waits on done (Stop,
		// Ensure) and then starts the next executor tells that start
		// after this end, never before (watchers would see two starts
		// and then an end, and take the new executor for gone).
		d.mu.Lock()
		d.emit(ev)
		d.mu.Unlock()
		close(done)
	}(e.done)
	d.log().Info("executor started", "user", name, "pid", cmd.Process.Pid, "backend", "direct")
	d.emit(UnitChange{User: name, Kind: "service", State: "active", Sub: "running"})
	return nil
}

// Watch calls fn each time an executor this backend started begins or
// ends, until ctx ends. fn runs with the backend locked: it must not call
// the backend.
func (d *Direct) Watch(ctx context.Context, fn func(UnitChange)) error {
	d.mu.Lock()
	if d.watchers == nil {
		d.watchers = map[*func(UnitChange)]struct{}{}
	}
	d.watchers[&fn] = struct{}{}
	for _, ev := range d.early {
		fn(ev)
	}
	d.early = nil
	d.mu.Unlock()
	<-ctx.Done()
	d.mu.Lock()
	delete(d.watchers, &fn)
	d.mu.Unlock()
	return nil
}

// emit runs with d.mu held.
func (d *Direct) emit(ev UnitChange) {
	if len(d.watchers) == 0 && len(d.early) < maxEarly {
		d.early = append(d.early, ev)
	}
	for fn := range d.watchers {
		(*fn)(ev)
	}
}

// identity is who the executor runs as and the environment User= would
// give it (HOME, USER, LOGNAME, SHELL).
func (d *Direct) identity(ctx context.Context, name string) (*syscall.Credential, []string, error) {
	accounts := d.Policy.Resolver()
	target := name
	if os.Geteuid() != 0 {
		self, err := accounts.LookupUID(ctx, uint32(os.Geteuid()))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrLookupFailed, err)
		}
		target = self.Name
		if !d.warned {
			d.log().Warn("not running as root: direct backend runs every executor as the daemon's own user", "user", target)
			d.warned = true
		}
	}
	u, err := accounts.LookupName(ctx, target)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNoSuchUser, err)
	}
	sh := u.Shell
	if sh == "" {
		sh = "/bin/sh"
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name, "SHELL=" + sh}
	if os.Geteuid() != 0 {
		return nil, env, nil
	}
	gids, err := accounts.GroupIDs(ctx, u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: gids}, env, nil
}

// Stop ends user's executor (SIGTERM, then SIGKILL after 10 s) and its socket.
func (d *Direct) Stop(ctx context.Context, name string) error {
	d.mu.Lock()
	e := d.execs[name]
	delete(d.execs, name)
	d.mu.Unlock()
	if e == nil {
		return nil
	}
	if e.running() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		case <-ctx.Done():
			_ = e.cmd.Process.Kill()
			<-e.done
		}
	}
	e.file.Close()
	return e.ln.Close() // unlinks the socket
}

// List reports the sockets this daemon holds.
func (d *Direct) List(context.Context) ([]Status, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Status, 0, len(d.execs))
	for name, e := range d.execs {
		st := Status{User: name, Socket: "active", Service: "inactive"}
		if e.running() {
			st.Service = "active"
		}
		out = append(out, st)
	}
	return out, nil
}

// Close stops every executor and waits for them.
func (d *Direct) Close() {
	d.mu.Lock()
	names := make([]string, 0, len(d.execs))
	for n := range d.execs {
		names = append(names, n)
	}
	d.mu.Unlock()
	for _, n := range names {
		_ = d.Stop(context.Background(), n)
	}
	d.wg.Wait()
}

func (d *Direct) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}
