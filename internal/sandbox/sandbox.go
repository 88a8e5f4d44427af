// Package sandbox confines what a task's agent, a command or a terminal
// may write, with Landlock: the kernel enforces it on the process and all
// its children, unprivileged, with no namespaces (the executor's unit
// forbids them) and no setuid. Go cannot run code between fork and exec,
// so the executor starts the target through itself: "agor-executor
// __agor-sandbox --rw PATH... -- ARGV" restricts itself (Main) and then
// execs ARGV, which inherits the restriction.
//
// Levels: off (as the user may), workspace (writes beneath the cwd, the
// agent's own state, a private temp directory and configured extra paths;
// reads as before) and read-only (writes only to the agent's state and
// temp). Landlock cannot forbid reading one path beneath a readable one,
// so there is no read deny-list.
package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Level is how far a process is confined.
type Level string

// The levels.
const (
	Off       Level = "off"
	Workspace Level = "workspace"
	ReadOnly  Level = "read-only"
)

// Levels lists them, weakest first.
var Levels = []Level{Off, Workspace, ReadOnly}

// ParseLevel accepts a level's name.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if s == string(l) {
			return l, nil
		}
	}
	return "", fmt.Errorf("sandbox level %q: want off, workspace or read-only", s)
}

// ForceABIEnv, when set to a number, stands in for the kernel's Landlock
// ABI (tests use 0 to act out a kernel without Landlock).
const ForceABIEnv = "AGOR_SANDBOX_FORCE_ABI"

// ABI is the kernel's Landlock ABI version: 0 when it has none (not built
// in, not in the lsm= list, or refused by a seccomp filter).
func ABI() int {
	if v := os.Getenv(ForceABIEnv); v != "" {
		n, _ := strconv.Atoi(v)
		return n
	}
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Spec is what a confined process may write.
type Spec struct {
	Level Level
	// Cwd is the task's working directory: writable under Workspace.
	Cwd string
	// Writable are the paths writable at every level but Off: the agent's
	// own state, the private temp directory, configured extra paths.
	Writable []string
}

// writable is every path the process may write.
func (s Spec) writable() []string {
	if s.Level == Workspace && s.Cwd != "" {
		return append([]string{s.Cwd}, s.Writable...)
	}
	return s.Writable
}

// LauncherArg, as the first argument of the executor, runs Main.
const LauncherArg = "__agor-sandbox"

// Command is argv run through the launcher self (the executor binary) under
// spec; under Off it is argv itself.
func Command(self string, spec Spec, argv []string) []string {
	if spec.Level == Off || spec.Level == "" {
		return argv
	}
	out := []string{self, LauncherArg}
	for _, p := range spec.writable() {
		out = append(out, "--rw", p)
	}
	return append(append(out, "--"), argv...)
}

// parse reads Main's arguments: --rw PATH... -- ARGV.
func parse(args []string) (rw, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--":
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("nothing to run after --")
			}
			return rw, args[i+1:], nil
		case args[i] == "--rw" && i+1 < len(args):
			rw = append(rw, args[i+1])
			i++
		default:
			return nil, nil, fmt.Errorf("unexpected argument %q (want --rw PATH... -- COMMAND)", args[i])
		}
	}
	return nil, nil, fmt.Errorf("no -- before the command")
}

// Describe is a line for logs and events: the level and what it allows.
func (s Spec) Describe() string {
	return fmt.Sprintf("%s (writable: %s)", s.Level, strings.Join(s.writable(), ", "))
}
