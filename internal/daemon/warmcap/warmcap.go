// Package warmcap holds the warm agents of all the executors on the host
// to agents.warm_per_host. An executor sees only its own user's, so each
// tells the daemon which it keeps (warm_agents); beyond the cap the daemon
// asks for the least recently used on the host back (release_warm_agent),
// whoever's they are.
package warmcap

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Executor is the connection a report came on, which the releases go
// back on: never a new one, so a release never starts an executor.
type Executor interface {
	Call(ctx context.Context, method string, params, result any) error
	Err() error // not nil once the connection has ended
}

var _ Executor = (*rpc.Conn)(nil)

// releaseTimeout bounds one release: an executor that does not answer
// must not hold the daemon's shutdown.
const releaseTimeout = 30 * time.Second

// Cap is safe for concurrent use.
type Cap struct {
	Max int // warm agents on the host at most; 0: no cap
	// PerUser is the most one user's report counts for
	// (agents.warm_per_user): a report listing more is cut to its most
	// recently used PerUser; 0 counts none.
	PerUser int
	Log     *slog.Logger

	warnedMS atomic.Int64 // last warning of a cut report: one a minute, not a flood

	mu    sync.Mutex
	users map[string]held // each user's latest report
	asked map[victim]bool // releases in flight, not asked twice
	calls sync.WaitGroup  // the releases in flight
}

// held is one executor's warm agents as it last reported them.
type held struct {
	ex     Executor
	agents []protocol.WarmAgent
}

// victim is one warm agent the cap asks back.
type victim struct {
	user  string
	agent protocol.WarmAgent
}

// Handler serves warm_agents on the connection to user's executor and
// passes every other message to next.
func (c *Cap) Handler(user string, next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if r.Method != protocol.MethodWarmAgents {
			return next.Handle(ctx, r)
		}
		var p protocol.WarmAgentsParams
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		// The report is user's word and counts for user only: user can
		// take this connection over (same uid) and say anything on it, so
		// Update clamps what it lists to what user could really hold.
		c.Update(user, r.Conn, p.Agents)
		return nil, nil
	})
}

// Update takes user's warm agents as ex reports them, replacing the
// previous report, and asks back what the host holds beyond the cap.
func (c *Cap) Update(user string, ex Executor, agents []protocol.WarmAgent) {
	agents = c.counted(user, agents, time.Now().UnixMilli())
	c.mu.Lock()
	if c.users == nil {
		c.users, c.asked = map[string]held{}, map[victim]bool{}
	}
	if len(agents) == 0 {
		delete(c.users, user)
	} else {
		c.users[user] = held{ex: ex, agents: agents}
	}
	out := c.overLocked()
	c.mu.Unlock()
	for _, a := range out {
		c.release(a)
	}
}

// counted is what user's report counts for. Its timestamps are clamped
// to now, when it came in: a use in the future would make every other
// user's agent the least recently used. Beyond PerUser (which user's
// executor keeps to itself) only the most recently used count, so one
// user's report can claim no more of the host than their own share.
func (c *Cap) counted(user string, agents []protocol.WarmAgent, now int64) []protocol.WarmAgent {
	out := slices.Clone(agents)
	for i := range out {
		out[i].LastUsedMS = min(out[i].LastUsedMS, now)
	}
	if len(out) <= c.PerUser {
		return out
	}
	if last := c.warnedMS.Load(); now-last >= 60_000 && c.warnedMS.CompareAndSwap(last, now) {
		c.log().Warn("warm_agents report lists more than warm_per_user; counting the most recently used",
			"user", user, "agents", len(agents), "warm_per_user", c.PerUser)
	}
	slices.SortStableFunc(out, func(x, y protocol.WarmAgent) int { return cmp.Compare(y.LastUsedMS, x.LastUsedMS) })
	return out[:max(c.PerUser, 0)]
}

// ask is a release to make, and the connection to make it on.
type ask struct {
	v  victim
	ex Executor
}

// overLocked lists the least recently used beyond the cap that are not
// being asked back already, and marks them asked.
func (c *Cap) overLocked() []ask {
	all := c.liveLocked()
	if c.Max <= 0 || len(all) <= c.Max {
		return nil
	}
	var out []ask
	for _, v := range all[:len(all)-c.Max] {
		if !c.asked[v] {
			c.asked[v] = true
			out = append(out, ask{v: v, ex: c.users[v.user].ex})
		}
	}
	return out
}

// liveLocked is every warm agent on the host, unused pre-warms and then
// the least recently used first.
// An executor whose connection has ended is gone with its agents (a new
// connection reports afresh). Ties go to the user who holds more, then
// by name, so the order is the same every time.
func (c *Cap) liveLocked() []victim {
	var all []victim
	count := map[string]int{} // each user's warm agents
	for user, h := range c.users {
		if h.ex.Err() != nil {
			delete(c.users, user)
			continue
		}
		count[user] = len(h.agents)
		for _, a := range h.agents {
			all = append(all, victim{user: user, agent: a})
		}
	}
	slices.SortFunc(all, func(x, y victim) int {
		// Unused pre-warms first: no conversation is lost with them, so
		// a pre-warm under a full host cap gives itself back first.
		return cmp.Or(cmp.Compare(unused(y.agent), unused(x.agent)), cmp.Compare(x.agent.LastUsedMS, y.agent.LastUsedMS), cmp.Compare(count[y.user], count[x.user]),
			cmp.Compare(x.user, y.user), cmp.Compare(x.agent.SessionID, y.agent.SessionID), cmp.Compare(x.agent.Tool, y.agent.Tool))
	})
	return all
}

func unused(a protocol.WarmAgent) int {
	if a.Prewarmed {
		return 1
	}
	return 0
}

// release asks v's executor, on a goroutine of its own: the report came
// on that connection's read loop, which the answer needs.
func (c *Cap) release(a ask) {
	v := a.v
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		p := protocol.ReleaseWarmAgentParams{SessionID: v.agent.SessionID, Tool: v.agent.Tool, LastUsedMS: v.agent.LastUsedMS, Reason: "host cap"}
		var res protocol.ReleaseWarmAgentResult
		err := a.ex.Call(ctx, protocol.MethodReleaseWarmAgent, p, &res)
		c.mu.Lock()
		delete(c.asked, v)
		c.mu.Unlock()
		c.logged(v, res.Released, err)
	}()
}

func (c *Cap) logged(v victim, released bool, err error) {
	attrs := []any{"user", v.user, "session_id", v.agent.SessionID, "agentic_tool", v.agent.Tool, "warm_per_host", c.Max}
	switch {
	case err != nil:
		c.log().Warn("warm agent not released for the host cap", append(attrs, "err", err)...)
	case released:
		c.log().Info("warm agent released: host cap", attrs...)
	default: // in a turn, used since, or gone: the executor's next report says
		c.log().Debug("warm agent not released: no longer idle and unused", attrs...)
	}
}

// Keep says whether user's executor has warm agents the cap may need to
// ask back over its connection, which should then stay open.
func (c *Cap) Keep(user string) bool {
	if c.Max <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.users[user]
	return ok && h.ex.Err() == nil
}

// Of is user's warm agents as their executor last reported them (none
// once it has gone).
func (c *Cap) Of(user string) []protocol.WarmAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.users[user]
	if !ok || h.ex.Err() != nil {
		return nil
	}
	return slices.Clone(h.agents)
}

// Wait waits for the releases in flight (they end with their connection).
func (c *Cap) Wait() { c.calls.Wait() }

func (c *Cap) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}
