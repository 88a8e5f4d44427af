package task

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/gitguard"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// WarmLimits bound the warm agents of this executor: agent processes kept
// after a turn for their session's next prompt (see config.Agents).
type WarmLimits struct {
	Idle        time.Duration // stopped after this long unused
	PerUser     int           // at most this many (this executor serves one user); least recently used go first
	MemoryBytes int64         // their resident memory together (0: unbounded)
	// HostMinAvailable: none is kept while the host's MemAvailable is
	// below it (0: off). The host-wide bound every executor sees alike.
	HostMinAvailable int64
	// PrewarmIdle: a pre-warmed agent no prompt used is stopped after
	// this long (0: none is started; prewarm_agent answers "off").
	PrewarmIdle time.Duration
}

// WarmLimitsOf is the configuration's agents section as limits.
func WarmLimitsOf(c config.Agents) WarmLimits {
	return WarmLimits{Idle: time.Duration(c.WarmIdleMS) * time.Millisecond, PerUser: c.WarmPerUser,
		MemoryBytes: c.WarmMemoryBytes, HostMinAvailable: c.WarmHostMinAvailableBytes,
		PrewarmIdle: time.Duration(c.PrewarmIdleMS) * time.Millisecond}
}

func (l WarmLimits) on() bool { return l.Idle > 0 && l.PerUser > 0 }

// warmAgent is one kept process, with what it was started with.
type warmAgent struct {
	key          string   // session and tool
	settings     settings // what it runs with: started with, or switched to since
	live         agent.Live
	agentSession string
	box          *protocol.SandboxInfo
	guard        *gitguard.Guard // its workspace's .git hooks and config, put back after each turn
	cleanup      func()          // the sandbox spec's, once the process is gone
	release      func()          // the executor hold, while it is kept
	used         time.Time
	idle         *time.Timer
	// prewarmed: started by prewarm_agent, no turn run yet (used is its
	// start); level is the sandbox level it was started at.
	prewarmed bool
	level     sandbox.Level
}

// stop ends the process and what it held.
func (a *warmAgent) stop() {
	a.live.Close()
	a.cleanup()
	if a.release != nil {
		a.release()
	}
}

// warmPool holds the warm agents by session. An agent running a turn is
// not in the pool: the task owns it, and gives it back with put.
type warmPool struct {
	limits    WarmLimits
	hold      Holder
	log       *slog.Logger
	rss       func(pid int) int64 // agent.GroupRSS
	available func() int64        // the host's MemAvailable
	room      func() int64        // below the executor's cgroup memory limit (cgroupRoom)
	report    *warmReport         // the set, to the daemon for the host's cap

	mu       sync.Mutex
	agents   map[string]*warmAgent
	closed   bool
	stopping sync.WaitGroup

	// exiting counts, per session key, the processes stopped and not yet
	// gone (stopLater); a turn that starts the session's agent afresh
	// waits for them (exited). Its own lock: stopLater is called with mu
	// held.
	emu     sync.Mutex
	exiting map[string]*exitWait
}

// exitWait is one key's processes on their way out: done closes when
// the last is gone.
type exitWait struct {
	n    int
	done chan struct{}
}

func newWarmPool(l WarmLimits, hold Holder, log *slog.Logger) *warmPool {
	return &warmPool{limits: l, hold: hold, log: log, rss: agent.GroupRSS, available: memAvailable, room: cgroupRoom,
		report: &warmReport{log: log}, agents: map[string]*warmAgent{}, exiting: map[string]*exitWait{}}
}

// warmKey is the pool's key: one warm agent per session and tool.
func warmKey(p protocol.ExecutePromptParams) string { return keyOf(p.SessionID, p.Tool) }

func keyOf(session, tool string) string { return session + "\x00" + tool }

// settings are what an agent process runs with. fixed hashes what it is
// started with and cannot change (tool, binary, cwd, sandbox,
// environment - the API key too, so a rotated key restarts the agent);
// the permission mode and model some agents switch live (agent.Live's
// CanSwitchMode and CanSwitchModel).
type settings struct {
	fixed, mode, model string
}

func settingsOf(p protocol.ExecutePromptParams, req agent.Request, level sandbox.Level) settings {
	h := sha256.New()
	// The level the turn runs at (its request and its floor, the
	// stricter) is fixed too: a change of mode across the floor (codex
	// into or out of bypassPermissions) restarts the agent at the new
	// level. The level, not the floor: a session's first confined turn
	// raises its floor to the level it ran at, which changes nothing.
	for _, s := range append([]string{p.Tool, req.Binary, req.Cwd, p.Sandbox, string(level)}, req.Env...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return settings{fixed: hex.EncodeToString(h.Sum(nil)), mode: req.PermissionMode, model: req.Model}
}

// take removes the session's warm agent from the pool for a turn with
// settings want when it runs with them, or can switch to what differs
// (permission mode, model); one that cannot is stopped (the turn starts
// cold and resumes the session). The agent taken is marked as running
// with want: its turn switches it, or ends it.
func (w *warmPool) take(key string, want settings) *warmAgent {
	w.mu.Lock()
	a := w.agents[key]
	if a != nil {
		delete(w.agents, key)
		a.idle.Stop()
		w.changedLocked() // running a turn, it is no longer warm
	}
	w.mu.Unlock()
	if a == nil {
		return nil
	}
	have := a.settings
	if a.prewarmed && have != want {
		// A pre-warmed agent serves only the prompt it was started for:
		// no live switch of mode or model, whatever the CLI allows.
		w.log.Info("warm agent stopped", "reason", "prewarm unused", "pid", a.live.Pid(), "session_key", strings.ReplaceAll(key, "\x00", "/"))
		w.stopLater(a)
		return nil
	}
	if have.fixed == want.fixed && (have.mode == want.mode || a.live.CanSwitchMode(want.mode)) &&
		(have.model == want.model || a.live.CanSwitchModel(want.model)) {
		a.settings = want
		return a
	}
	w.log.Info("warm agent restarted: the prompt changed its settings", "session_key", strings.ReplaceAll(key, "\x00", "/"))
	w.stopLater(a)
	return nil
}

// put keeps a after its turn, then stops what the limits no longer allow.
func (w *warmPool) put(a *warmAgent) {
	if !a.live.Usable() {
		w.stopLater(a)
		return
	}
	w.mu.Lock()
	if w.closed || !w.limits.on() {
		w.mu.Unlock()
		w.stopLater(a)
		return
	}
	var out []*warmAgent
	if old := w.agents[a.key]; old != nil { // a concurrent prompt of the session ran cold
		old.idle.Stop()
		out = append(out, old)
	}
	if a.release == nil && w.hold != nil {
		a.release = w.hold.Hold() // keeps the executor, within Idle
	}
	a.used = time.Now()
	a.idle = time.AfterFunc(w.limits.Idle, func() { w.expire(a, "idle") })
	w.agents[a.key] = a
	out = append(out, w.overLocked()...)
	w.changedLocked()
	w.mu.Unlock()
	for _, v := range out {
		w.stopLater(v)
	}
}

// overLocked removes, least recently used first, the agents beyond the
// count, the memory budget and the host's available memory.
func (w *warmPool) overLocked() []*warmAgent {
	lru := make([]*warmAgent, 0, len(w.agents))
	for _, a := range w.agents {
		lru = append(lru, a)
	}
	slices.SortFunc(lru, evictFirst)
	var out []*warmAgent
	for len(lru) > w.limits.PerUser {
		out, lru = append(out, lru[0]), lru[1:]
	}
	if w.limits.MemoryBytes > 0 {
		sizes := make([]int64, len(lru))
		var total int64
		for i, a := range lru {
			sizes[i] = w.rss(a.live.Pid())
			total += sizes[i]
		}
		for len(lru) > 0 && total > w.limits.MemoryBytes {
			total -= sizes[0]
			out, lru, sizes = append(out, lru[0]), lru[1:], sizes[1:]
		}
	}
	if w.limits.HostMinAvailable > 0 && len(lru) > 0 {
		if avail := w.available(); avail >= 0 && avail < w.limits.HostMinAvailable {
			out = append(out, lru...)
		}
	}
	for _, a := range out {
		a.idle.Stop()
		delete(w.agents, a.key)
	}
	return out
}

// evictFirst orders agents for eviction: unused pre-warms (no
// conversation is lost with them), then least recently used.
func evictFirst(x, y *warmAgent) int {
	if x.prewarmed != y.prewarmed {
		if x.prewarmed {
			return -1
		}
		return 1
	}
	return x.used.Compare(y.used)
}

// expire stops a when it is still the session's warm agent.
func (w *warmPool) expire(a *warmAgent, why string) {
	w.stopIf(a.key, why, func(b *warmAgent) bool { return b == a })
}

// release stops the session's warm agent for the daemon's host cap. One
// running a turn is not in the pool, and is not stopped; nor is one used
// after the use the daemon saw (usedMS, 0: any), whose view was stale.
func (w *warmPool) release(key string, usedMS int64, why string) bool {
	return w.stopIf(key, why, func(a *warmAgent) bool { return usedMS == 0 || a.used.UnixMilli() <= usedMS })
}

// stopIf stops the session's warm agent when it is one that match says
// to stop, and says whether it did.
func (w *warmPool) stopIf(key, why string, match func(*warmAgent) bool) bool {
	w.mu.Lock()
	a := w.agents[key]
	ok := a != nil && match(a)
	if ok {
		a.idle.Stop()
		delete(w.agents, key)
		w.changedLocked()
	}
	w.mu.Unlock()
	if ok {
		w.log.Info("warm agent stopped", "reason", why, "pid", a.live.Pid())
		w.stopLater(a)
	}
	return ok
}

// changedLocked hands the reporter the set as it is now. Called with
// w.mu held, so that the reports follow the changes in order.
func (w *warmPool) changedLocked() {
	set := make([]protocol.WarmAgent, 0, len(w.agents))
	for _, a := range w.agents {
		session, tool, _ := strings.Cut(a.key, "\x00")
		set = append(set, protocol.WarmAgent{SessionID: session, Tool: tool, LastUsedMS: a.used.UnixMilli(), Prewarmed: a.prewarmed})
	}
	// Oldest first; agents used in the same millisecond by session, so a
	// report does not depend on the map's order.
	slices.SortFunc(set, func(x, y protocol.WarmAgent) int {
		return cmp.Or(cmp.Compare(x.LastUsedMS, y.LastUsedMS), cmp.Compare(x.SessionID, y.SessionID), cmp.Compare(x.Tool, y.Tool))
	})
	w.report.set(set)
}

// stopLater stops a on a goroutine of its own: an agent may take seconds
// to write its session and exit, which no prompt of another session
// should wait for. One of a's session does (exited).
func (w *warmPool) stopLater(a *warmAgent) {
	w.stopping.Add(1)
	w.emu.Lock()
	e := w.exiting[a.key]
	if e == nil {
		e = &exitWait{done: make(chan struct{})}
		w.exiting[a.key] = e
	}
	e.n++
	w.emu.Unlock()
	go func() {
		defer w.stopping.Done()
		a.stop()
		w.emu.Lock()
		defer w.emu.Unlock()
		if e.n--; e.n == 0 {
			close(e.done)
			delete(w.exiting, a.key)
		}
	}()
}

// exited waits until every process of key stopped is gone, or ctx ends.
// A new process of the session must not meet an old one: both would
// write the agent's session (codex refuses the second: "thread ...
// already has an active writer"), and the old one's last writes (the
// turn just run) would be missing from what the new one resumes.
func (w *warmPool) exited(ctx context.Context, key string) error {
	w.emu.Lock()
	e := w.exiting[key]
	w.emu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// len is how many agents are warm.
func (w *warmPool) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.agents)
}

// close stops every warm agent and waits for them.
func (w *warmPool) close() {
	w.mu.Lock()
	w.closed = true
	all := w.agents
	w.agents = map[string]*warmAgent{}
	if len(all) > 0 {
		w.changedLocked()
	}
	w.mu.Unlock()
	for _, a := range all {
		a.idle.Stop()
		w.stopLater(a)
	}
	w.stopping.Wait()
	w.report.wait()
}

// memAvailable is the host's MemAvailable in bytes (-1: unknown, which
// keeps the host-wide bound from evicting anything).
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(string(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return -1
}
