package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// ExitLauncher is the launcher's status when it cannot confine or start
// the command (as a shell's 126: found but not run).
const ExitLauncher = 126

// Main is the launcher (the executor run as "__agor-sandbox ..."): it
// restricts this process with Landlock, reading everywhere, writing only
// beneath the --rw paths (and /dev, ioctls included, for PTYs and
// /dev/null), then
// execs the command, which inherits the restriction. It returns only on
// failure.
func Main(args []string, stderr io.Writer) int {
	rw, argv, argv0, err := parse(args)
	if err == nil {
		err = restrict(rw)
	}
	if err == nil {
		err = execve(argv, argv0)
	}
	fmt.Fprintf(stderr, "agor sandbox: %v\n", err)
	return ExitLauncher
}

// restrict applies the rules. Best effort up to the ABI this kernel has
// (V7 at most here); a kernel without Landlock was refused or warned about
// by the executor before it started the launcher.
func restrict(rw []string) error {
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		// Terminals and what runs in them open PTYs and talk to them
		// with ioctls (grantpt, unlockpt, window size).
		landlock.RWDirs("/dev").WithIoctlDev().IgnoreIfMissing(),
	}
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
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

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
