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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
	"golang.org/x/sys/unix"
)

// Level is how far a process is confined.
type Level string

// The levels.
const (
	Off       Level = protocol.SandboxOff
	Workspace Level = protocol.SandboxWorkspace
	ReadOnly  Level = protocol.SandboxReadOnly
)

// Levels lists them, weakest first.
var Levels = []Level{Off, Workspace, ReadOnly}

// Stricter is the stricter of a and b (read-only over workspace over off).
func Stricter(a, b Level) Level {
	if slices.Index(Levels, b) > slices.Index(Levels, a) {
		return b
	}
	return a
}

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
	// Argv0, when set, is the command's argv[0] (a login shell's "-bash");
	// the program is still looked up by the command's first word.
	Argv0 string
	// Temp is the process's private temp directory (writable; TMPDIR in
	// its environment); Cleanup removes it.
	Temp string
	// UnixSockets lets the process open Unix sockets (the operator's
	// sandbox.unix_sockets); otherwise the launcher's filter refuses them.
	UnixSockets bool
	// Namespaces builds the process's filesystem view in a mount
	// namespace of its own (mountns.go), with signals scoped by a PID
	// namespace; without it, Landlock and the seccomp filter alone.
	Namespaces bool
	// Names are the person's own entries, which the view adds to its
	// /etc/passwd and /etc/group where the host's lack them (names.go).
	Names Names
	// self is the launcher, Policy.Self.
	self string
}

// Env is env with TMPDIR pointing at the private temp directory, and the
// package managers' caches there too (npm's; pip's and others' by XDG)
// unless env names them already (an agent's confined state): the
// person's own caches are not writable here, and must not be, or a cache
// a confined run wrote would be what an unconfined one later runs.
func (s Spec) Env(env []string) []string {
	if s.Temp == "" {
		return env
	}
	out := append(env[:len(env):len(env)], "TMPDIR="+s.Temp)
	for _, kv := range [][2]string{{"XDG_CACHE_HOME", "cache"}, {"npm_config_cache", "npm"}} {
		if !hasEnv(env, kv[0]) {
			out = append(out, kv[0]+"="+filepath.Join(s.Temp, kv[1]))
		}
	}
	return out
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// Cleanup removes the private temp directory, once the process is gone.
func (s Spec) Cleanup() {
	if s.Temp != "" {
		_ = os.RemoveAll(s.Temp)
	}
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

// Command is argv run through the launcher (the executor binary) under
// s; under Off it is argv itself.
func (s Spec) Command(argv []string) []string {
	if s.Level == Off || s.Level == "" {
		return argv
	}
	out := []string{s.self, LauncherArg}
	if s.Argv0 != "" {
		out = append(out, "--argv0", s.Argv0)
	}
	if s.UnixSockets {
		out = append(out, "--unix-sockets")
	}
	if s.Namespaces {
		out = append(out, "--ns")
		if s.Temp != "" {
			out = append(out, "--tmp", s.Temp)
		}
		if s.Level == Workspace && s.Cwd != "" {
			out = append(out, "--workspace", s.Cwd)
		}
		if s.Names.Passwd != "" {
			out = append(out, "--passwd", s.Names.Passwd)
		}
		if s.Names.Group != "" {
			out = append(out, "--group", s.Names.Group)
		}
	}
	for _, p := range s.writable() {
		out = append(out, "--rw", p)
	}
	return append(append(out, "--"), argv...)
}

// launch is what Main is asked to do.
type launch struct {
	rw          []string // writable paths
	argv        []string // the command
	argv0       string   // its argv[0], when not argv's first word
	unixSockets bool     // Unix socket connections allowed (the operator's exception)
	ns          bool     // build the view in namespaces of its own (mountns.go)
	init        bool     // this is that namespace's init (nsInit)
	workspace   string   // where Protected are looked for
	tmp         string   // the private temp directory, also on /tmp
	names       Names    // her own entries for the view's /etc files
}

// parse reads Main's arguments:
// [--argv0 NAME] [--unix-sockets] --rw PATH... -- ARGV.
func parse(args []string) (launch, error) {
	var l launch
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--":
			if i+1 >= len(args) {
				return launch{}, fmt.Errorf("nothing to run after --")
			}
			l.argv = args[i+1:]
			return l, nil
		case args[i] == "--rw" && i+1 < len(args):
			l.rw = append(l.rw, args[i+1])
			i++
		case args[i] == "--argv0" && i+1 < len(args):
			l.argv0 = args[i+1]
			i++
		case args[i] == "--unix-sockets":
			l.unixSockets = true
		case args[i] == "--ns":
			l.ns = true
		case args[i] == nsInitArg:
			l.init = true
		case args[i] == "--workspace" && i+1 < len(args):
			l.workspace = args[i+1]
			i++
		case args[i] == "--tmp" && i+1 < len(args):
			l.tmp = args[i+1]
			i++
		case args[i] == "--passwd" && i+1 < len(args):
			l.names.Passwd = args[i+1]
			i++
		case args[i] == "--group" && i+1 < len(args):
			l.names.Group = args[i+1]
			i++
		default:
			return launch{}, fmt.Errorf("unexpected argument %q (want --rw PATH... -- COMMAND)", args[i])
		}
	}
	return launch{}, fmt.Errorf("no -- before the command")
}

// Policy is the operator's sandbox configuration as the executor applies
// it: which levels a request may ask for, the one it gets when it asks
// for none, and what to do on a kernel without Landlock.
type Policy struct {
	Default Level
	// Prompts is the level of an agent's prompt that names none ("":
	// Default): agents are what a sandbox is for; a person's own
	// commands and terminals get Default.
	Prompts Level
	Allowed []Level
	// Required refuses confined work when the kernel lacks Landlock;
	// otherwise it runs unconfined with a warning.
	Required bool
	// Extra are writable at every level but off (absolute, or "~/..."
	// beneath the user's home).
	Extra []string
	// Self is the launcher: the executor's own binary.
	Self string
	// TempDir is where each confined process gets a private temp
	// directory of its own (default: os.TempDir(), the unit's private
	// /tmp under PrivateTmp=yes).
	TempDir string
	// UnixSockets is the operator's exception: confined processes may
	// open Unix sockets (and so reach whatever listens on one).
	UnixSockets bool
	// Names are the executor's own account's entries, for the view
	// (NamesOf; the executor's to set).
	Names Names
}

// PromptLevel is the level an agent's prompt asks for: its own, else
// the configured prompts level ("" then: the default).
func (p *Policy) PromptLevel(requested string) string {
	if requested == "" && p != nil {
		return string(p.Prompts)
	}
	return requested
}

// PolicyOf is the configuration's sandbox section as a Policy (Self and
// TempDir are the executor's to set).
func PolicyOf(c config.Sandbox) *Policy {
	p := &Policy{Default: Level(c.Default), Prompts: Level(c.Prompts), Required: c.Required, Extra: c.ExtraWritable, UnixSockets: c.UnixSockets}
	for _, l := range c.Allowed {
		p.Allowed = append(p.Allowed, Level(l))
	}
	return p
}

// Applied says what confinement a process got, for its events, result
// and the audit trail.
type Applied = protocol.SandboxInfo

// ErrUnavailable: confinement was asked for and the kernel cannot give it.
var ErrUnavailable = errors.New("sandbox unavailable")

// ErrWorkspaceHome: a workspace is a project, never the home directory or
// a directory above it, which would make everything of the user's
// writable (~/.bashrc, ~/.ssh/authorized_keys).
var ErrWorkspaceHome = errors.New("the workspace would be the home directory or above it: name a project directory with --cwd")

// PlainHome reports whether a request's cwd plainly names the home
// directory its executor starts in ("", ".", "~", "/"): what agorctl and
// the API can refuse for a workspace before anything is sent or stored,
// without knowing the home. HomeWorkspace decides for every path.
func PlainHome(cwd string) bool {
	switch strings.TrimSuffix(strings.TrimSpace(cwd), "/") {
	case "", ".", "~":
		return true
	}
	return false
}

// HomeWorkspace reports whether cwd, as a workspace, would hold home.
func HomeWorkspace(cwd, home string) bool {
	if home == "" || cwd == "" {
		return false
	}
	c, h := filepath.Clean(cwd), filepath.Clean(home)
	if r, err := filepath.EvalSymlinks(h); err == nil {
		h = r
	}
	if r, err := filepath.EvalSymlinks(c); err == nil {
		c = r
	}
	return c == h || c == "/" || strings.HasPrefix(h, c+"/")
}

// Resolve is the level a request gets: its own if allowed, the default
// when it names none.
func (p Policy) Resolve(requested string) (Level, error) {
	if requested == "" {
		if p.Default == "" {
			return Off, nil
		}
		return p.Default, nil
	}
	l, err := ParseLevel(requested)
	if err != nil {
		return "", err
	}
	if len(p.Allowed) > 0 && !slices.Contains(p.Allowed, l) {
		return "", fmt.Errorf("sandbox level %q is not allowed here (allowed: %v)", l, p.Allowed)
	}
	return l, nil
}

// Prepare is the spec a process at level runs under, beneath cwd, with
// state (the agent's own directories) writable, and what it got. On a
// kernel without Landlock it is an error when Required, else the process
// runs unconfined and Applied says so.
func (p Policy) Prepare(level Level, cwd, home string, state []string) (Spec, Applied, error) {
	a := Applied{Level: string(level), ABI: ABI()}
	if level == Off {
		return Spec{Level: Off}, a, nil
	}
	if level == Workspace && HomeWorkspace(cwd, home) {
		return Spec{}, a, fmt.Errorf("%w (cwd %s)", ErrWorkspaceHome, cwd)
	}
	if a.ABI == 0 {
		if p.Required {
			return Spec{}, a, fmt.Errorf("%w: sandbox level %s asked for, but this kernel has no Landlock (ABI 0) and the configuration requires it", ErrUnavailable, level)
		}
		a.Warning = "this kernel has no Landlock (ABI 0): running unconfined, as the configuration allows"
		return Spec{Level: Off}, a, nil
	}
	w := append([]string(nil), state...)
	temp, err := os.MkdirTemp(p.TempDir, "agor-sandbox-")
	if err != nil {
		return Spec{}, a, fmt.Errorf("sandbox temp directory: %w", err)
	}
	w = append(w, temp)
	for _, e := range p.Extra {
		if rest, ok := strings.CutPrefix(e, "~/"); ok {
			e = filepath.Join(home, rest)
		}
		w = append(w, e)
	}
	a.Enforced = true
	spec := Spec{Level: level, Cwd: cwd, Writable: w, Temp: temp, self: p.Self, UnixSockets: p.UnixSockets}
	if err := NamespacesWork(p.Self); err != nil {
		if p.Required {
			spec.Cleanup()
			return Spec{}, a, fmt.Errorf("%w: %v, and the configuration requires the sandbox", ErrUnavailable, err)
		}
		a.Warning = fmt.Sprintf("%v: Landlock and the seccomp filter alone confine it", err)
		return spec, a, nil
	}
	spec.Namespaces, spec.Names, a.View = true, p.Names, ViewNamespace
	return spec, a, nil
}

// For resolves requested and prepares it, in one step; a nil Policy runs
// everything unconfined and refuses a request for confinement.
func (p *Policy) For(requested, cwd, home string, state []string) (Spec, Applied, error) {
	return p.ForAtLeast(requested, Off, cwd, home, state)
}

// ForAtLeast is For with a floor: the process runs at least that
// confined, whatever was asked (and whether or not the operator lets
// requests ask for that level: the floor is agor's, not the request's).
// A nil Policy cannot confine: a floor above off then runs unconfined,
// saying so in Applied's warning.
func (p *Policy) ForAtLeast(requested string, floor Level, cwd, home string, state []string) (Spec, Applied, error) {
	if p == nil {
		switch {
		case requested != "" && requested != string(Off):
			return Spec{}, Applied{}, fmt.Errorf("%w: this executor has no sandbox configured", ErrUnavailable)
		case floor != Off:
			return Spec{Level: Off}, Applied{Level: string(Off), Warning: fmt.Sprintf("this executor has no sandbox configured: the %s level the permission mode needs is not enforced", floor)}, nil
		}
		return Spec{Level: Off}, Applied{Level: string(Off)}, nil
	}
	level, err := p.Resolve(requested)
	if err != nil {
		return Spec{}, Applied{}, err
	}
	return p.Prepare(Stricter(level, floor), cwd, home, state)
}

// DirPath is the path of an open directory, as the kernel resolved it.
func DirPath(dir *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
}

// Error is a refusal to confine as the protocol says it: the level is not
// allowed here (bad params, naming the field), or the kernel cannot give
// it (executor unavailable, reason sandbox_unavailable).
func Error(err error) error {
	if errors.Is(err, ErrWorkspaceHome) {
		return rpc.InvalidParams("cwd", err.Error())
	}
	if errors.Is(err, ErrUnavailable) {
		return rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonSandboxUnavailable, "%v", err)
	}
	return rpc.InvalidParams("sandbox", err.Error())
}
