package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// ExitLauncher is the launcher's status when it cannot confine or start
// the command (as a shell's 126: found but not run).
const ExitLauncher = 126

// Main is the launcher (the executor run as "__agor-sandbox ..."): it
// restricts this process with Landlock (reading everywhere, writing only
// beneath the --rw paths and a few devices; no signals or abstract Unix
// sockets out of its domain) and the seccomp filter of seccomp.go, then
// execs the command, which inherits both. It returns only on failure.
//
// With --ns it first starts itself again in new user, mount and PID
// namespaces (nsParent), where the kernel builds the filesystem view of
// mountns.go (nsInit) before the same restrictions, and the command runs
// as the child of that namespace's init.
func Main(args []string, stderr io.Writer) int {
	// The filter is the installing thread's: exec from that thread.
	runtime.LockOSThread()
	l, err := parse(args)
	switch {
	case err == nil && l.init:
		return nsInit(l, stderr)
	case err == nil && l.ns:
		return nsParent(args, stderr)
	}
	if err == nil {
		err = restrict(l.rw)
	}
	if err == nil {
		err = installFilter(l.unixSockets, false)
	}
	if err == nil {
		err = execve(l.argv, l.argv0)
	}
	fmt.Fprintf(stderr, "agor sandbox: %v\n", err)
	return ExitLauncher
}

// devices are what a confined process may open for writing in /dev: what
// a terminal and common tools need. Not the host's /dev/shm (a view has
// a tmpfs of its own there, which view.writable adds) nor any other
// device. /dev/pts is among them: agents' shell tools allocate PTYs
// (gemini's forkpty). Landlock cannot tell a new PTY from another of the
// user's terminals: in a view, /dev/pts is a devpts instance of the
// task's own (ownDevices), which has none of hers; without one (the
// plain launcher) such text can still be written there (typed input
// cannot: TIOCSTI is the kernel's to refuse).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// restrict applies the rules. Best effort up to the ABI this kernel has
// (V7 at most here); a kernel without Landlock was refused or warned about
// by the executor before it started the launcher. Network access is not
// Landlock's here: TCP stays as the user may (agents call model APIs).
func restrict(rw []string) error {
	rules := []landlock.Rule{landlock.RODirs("/")}
	for _, d := range devices {
		rules = append(rules, landlock.RWFiles(d).WithIoctlDev().IgnoreIfMissing())
	}
	rules = append(rules, landlock.RWDirs("/dev/pts").WithIoctlDev().IgnoreIfMissing())
	rules = append(rules, ownTerminals()...)
	for _, p := range rw {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue // nothing there to write beneath; creating it is denied
		case fi.IsDir():
			rules = append(rules, landlock.RWDirs(p).WithRefer())
		default:
			rules = append(rules, landlock.RWFiles(p))
		}
	}
	cfg := landlockConfig().BestEffort()
	cfg.HandledAccessNet = 0
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// ownTerminals lets the process reopen the terminal it was started on
// (/dev/stdout, /dev/stderr, /proc/self/fd/N), which a view's devpts no
// longer shows: a rule on the inode of each of fds 0-2 that is a PTY
// slave. The fds themselves are open already; nothing new is reached.
func ownTerminals() []landlock.Rule {
	var rules []landlock.Rule
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if m := unix.Major(st.Rdev); m < ptySlaveMajor || m >= ptySlaveMajor+8 {
			continue
		}
		p := "/proc/self/fd/" + strconv.Itoa(fd)
		rules = append(rules, landlock.RWFiles(p).WithIoctlDev().IgnoreIfMissing())
	}
	return rules
}

// ptySlaveMajor is the first of the kernel's 8 majors for UNIX 98 PTY
// slaves (UNIX98_PTY_SLAVE_MAJOR, char-pts in systemd's DeviceAllow=).
const ptySlaveMajor = 136

func execve(argv []string, argv0 string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	if argv0 != "" {
		argv = append([]string{argv0}, argv[1:]...)
	}
	return syscall.Exec(path, argv, os.Environ())
}

// landlockConfig is the newest ABI this package knows, or the one
// ForceABIEnv caps it at (the tests act out Debian 12's kernel, ABI 2).
func landlockConfig() landlock.Config {
	all := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}
	if v := os.Getenv(ForceABIEnv); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(all) {
			return all[n-1]
		}
	}
	return all[len(all)-1]
}
