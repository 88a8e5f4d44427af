package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrGone says a warm agent could not take its next turn: its process was
// gone (it exited or was killed between turns), or it refused the turn's
// permission mode. Nothing was emitted, the process is closed, and the
// caller runs the turn cold instead, resuming the agent's session.
var ErrGone = errors.New("the warm agent cannot run the turn")

// Live is an agent process kept between the turns of one session (a warm
// agent): its next turn goes to the same process instead of a new one
// that reloads the conversation from disk.
type Live interface {
	// Turn runs one more turn, as Run would; req's Prompt, TaskID,
	// PermissionMode and Model are used (the rest is what the process was
	// started with). ErrGone: nothing ran. When ctx ends the turn is interrupted
	// through the protocol and the process kept where it allows.
	Turn(ctx context.Context, req Request, host Host) (Result, error)
	// Usable says whether the process can take another turn.
	Usable() bool
	// CanSwitchMode says whether a turn in permission mode mode (other
	// than the one the process was started with) can run on this
	// process; otherwise it is restarted.
	CanSwitchMode(mode string) bool
	// CanSwitchModel says the same of a turn with model model ("" the
	// CLI's default): Turn then switches the process to it.
	CanSwitchModel(model string) bool
	// Pid is the agent's process (the leader of its process group).
	Pid() int
	// Close ends the process, letting it write its session first.
	Close()
}

// Opener is an Adapter whose process can outlive its turn.
type Opener interface {
	Adapter
	// Open runs a first turn exactly as Run does and returns the process
	// for further turns when it is still usable (nil otherwise).
	Open(ctx context.Context, req Request, host Host) (Result, Live, error)
}

// interruptGrace is how long an interrupted turn has to end through the
// protocol before the agent is killed (and not kept).
const interruptGrace = 5 * time.Second

// runOnce is Run for an Opener: the process is not kept.
func runOnce(ctx context.Context, o Opener, req Request, host Host) (Result, error) {
	res, live, err := o.Open(ctx, req, host)
	if live != nil {
		live.Close()
	}
	return res, err
}

// Alive says whether the agent's process is still running (not exited,
// not a zombie waiting to be reaped).
func (p *Proc) Alive() bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// ReapStrays kills what the agent's tools left running after a turn
// (background jobs, or a command of a stopped turn): every process that
// carries this run's tag outside the agent's own process group (the
// CLIs run their tools in sessions of their own). A process that ends
// with its turn would be reaped by Wait; a warm one needs this instead.
func (p *Proc) ReapStrays() {
	pgid := p.Pid()
	for _, pid := range tagged([]byte(p.tag + "\x00")) {
		if g, err := syscall.Getpgid(pid); err == nil && g != pgid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Pid is the agent's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// GroupRSS is the resident memory, in bytes, of every process in the
// process group led by pid (the agent and what it started; a warm agent
// runs no tools between turns).
func GroupRSS(pid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	page := int64(os.Getpagesize())
	var total int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		// After "comm)": state ppid pgrp session tty tpgid flags minflt
		// cminflt majflt cmajflt utime stime cutime cstime priority nice
		// threads itrealvalue starttime vsize rss.
		f := bytes.Fields(b[i+2:])
		if len(f) < 22 || string(f[2]) != strconv.Itoa(pid) {
			continue
		}
		rss, _ := strconv.ParseInt(string(f[21]), 10, 64)
		total += rss * page
	}
	return total
}

// counting is a Host that notes whether anything was emitted, so that a
// warm turn that failed before its first event can be run cold instead.
type counting struct {
	Host
	n atomic.Int64
}

func (c *counting) Emit(ev Event) {
	c.n.Add(1)
	c.Host.Emit(ev)
}

// silent says nothing was emitted.
func (c *counting) silent() bool { return c.n.Load() == 0 }
