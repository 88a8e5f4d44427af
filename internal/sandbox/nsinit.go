package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsInitArg marks the launcher started again inside its namespaces.
const nsInitArg = "--ns-init"

// statusFD is where the namespace's init reports how the command ended
// ("exit N" or "signal N"): its own exit cannot carry a signal, since the
// kernel ends a namespace's init only with SIGKILL.
const statusFD = 3

// forwarded are the signals the launcher's two processes catch rather
// than die of: the executor signals the whole process group, which the
// command is in too, and each waits for the command to end first.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// nsParent starts the launcher again (with the same arguments and
// nsInitArg) as the init of new user, mount, PID and IPC namespaces (the
// last so that no SysV object or POSIX queue of her other programs is
// the task's to read, change or forge), in which
// the person is mapped to herself; the init holds CAP_SYS_ADMIN there, in
// that user namespace only, until the view is built. It waits, and ends
// as the command did.
func nsParent(args []string, stderr io.Writer) int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "agor sandbox: %v\n", err)
		return ExitLauncher
	}
	cmd := exec.Command("/proc/self/exe", append([]string{LauncherArg, nsInitArg}, args...)...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:                  syscall.SIGKILL, // this thread is locked: it lives as long as we do
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		fmt.Fprintf(stderr, "agor sandbox: namespaces: %v\n", err)
		return ExitLauncher
	}
	status, _ := io.ReadAll(io.LimitReader(r, 64))
	r.Close()
	werr := cmd.Wait()
	return endAs(string(status), werr)
}

// endAs ends this process as the command ended: the status its init
// reported, else (the init failed before the command ran) the init's.
func endAs(status string, werr error) int {
	how, n, _ := strings.Cut(strings.TrimSpace(status), " ")
	code, err := strconv.Atoi(n)
	switch {
	case err == nil && how == "exit":
		return code
	case err == nil && how == "signal":
		sig := syscall.Signal(code)
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		return 128 + code // a signal this process may not die of (SIGSTOP's kin)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode()
	}
	return ExitLauncher
}

// nsInit is the namespaces' init: it builds the view, gives up its
// capability, restricts itself as the plain launcher does, then runs the
// command as its child and reaps until that child ends (orphans of the
// command are reparented here; when init ends the kernel kills what is
// left in the PID namespace, so nothing of a task outlives it).
func nsInit(l launch, stderr io.Writer) int {
	unix.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	wd, err := os.Getwd()
	if err != nil {
		return ExitLauncher
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "agor sandbox: %v\n", err)
		return ExitLauncher
	}
	v := view{rw: l.rw, tmp: l.tmp, wd: wd, names: l.names}
	v.protect, v.pins = protectedIn(l.workspace)
	if err := v.build(); err != nil {
		return fail(err)
	}
	// The working directory was the mount beneath, now read-only: enter
	// the view's.
	if err := unix.Chdir(wd); err != nil {
		return fail(fmt.Errorf("working directory %s: %w", wd, err))
	}
	// The command gets no capability: ambient ones would survive its exec.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("drop capabilities: %w", err))
	}
	if v.overlayTmp() {
		_ = os.Setenv("TMPDIR", "/tmp") // its own, private
	}
	if err := restrict(v.writable()); err != nil {
		return fail(err)
	}
	// This init outlives the command: it answers the command's umask calls.
	if err := installFilter(l.unixSockets, true); err != nil {
		return fail(err)
	}
	signal.Notify(make(chan os.Signal, 8), forwarded...)
	pid, err := startChild(l)
	if err != nil {
		return fail(err)
	}
	ws := reap(pid)
	if ws.Signaled() {
		fmt.Fprintf(status, "signal %d", int(ws.Signal()))
		return 128 + int(ws.Signal())
	}
	fmt.Fprintf(status, "exit %d", ws.ExitStatus())
	return ws.ExitStatus()
}

// startChild starts the command on this (locked) thread, which carries
// the filter.
func startChild(l launch) (int, error) {
	path, err := exec.LookPath(l.argv[0])
	if err != nil {
		return 0, err
	}
	argv := l.argv
	if l.argv0 != "" {
		argv = append([]string{l.argv0}, argv[1:]...)
	}
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
}

// reap waits for any child until pid has ended, and returns its status.
func reap(pid int) unix.WaitStatus {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || got == pid {
			return ws
		}
	}
}

// ViewNamespace is Applied.View for a view built in namespaces.
const ViewNamespace = "namespace"

// ErrNoNamespaces: this host does not let the executor make the user
// and mount namespaces of the filesystem view.
var ErrNoNamespaces = errors.New("no user namespaces for the sandbox's filesystem view")

var nsProbe struct {
	sync.Mutex
	done map[string]error
}

// NamespacesWork reports whether launcher self can build a view here:
// it runs /bin/true through it once (per launcher, for as long as this
// process runs). A host may refuse: a unit with RestrictNamespaces=yes, a
// kernel with unprivileged user namespaces off, an AppArmor policy that
// restricts them (Ubuntu 24.04) without agor's profile.
func NamespacesWork(self string) error {
	nsProbe.Lock()
	defer nsProbe.Unlock()
	if err, ok := nsProbe.done[self]; ok {
		return err
	}
	if nsProbe.done == nil {
		nsProbe.done = map[string]error{}
	}
	err := probeNamespaces(self)
	nsProbe.done[self] = err
	return err
}

// probeEnvMark is set in the probe's environment: a binary that is not a
// launcher after all (it does not dispatch LauncherArg first) runs as
// itself, and must not probe again from there.
const probeEnvMark = "AGOR_SANDBOX_PROBING"

func probeNamespaces(self string) error {
	if self == "" {
		return fmt.Errorf("%w: no launcher", ErrNoNamespaces)
	}
	if os.Getenv(probeEnvMark) != "" {
		return fmt.Errorf("%w: %s is not a sandbox launcher", ErrNoNamespaces, self)
	}
	tmp, err := os.MkdirTemp("", "agor-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoNamespaces, err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, LauncherArg, "--ns", "--tmp", tmp, "--rw", tmp, "--", "/bin/true")
	cmd.Env = append(os.Environ(), probeEnvMark+"=1")
	cmd.Dir = "/" // not the caller's, which may be in the /tmp the view replaces
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoNamespaces, firstLine(out, err))
	}
	return nil
}

func firstLine(out []byte, err error) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if s == "" {
		return err.Error()
	}
	return strings.TrimPrefix(s, "agor sandbox: ")
}
