package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/egress"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// networkSource is the configuration's network and gateway sections,
// read again when the file changes: allow and deny lists take effect at
// each person's next connection, prices and budgets at the next model
// request, without a restart. A file that no longer parses leaves the
// last good sections in force, and says so. The file's drop-ins count as
// the file: one added, changed or removed is a change (config.Stamp).
type networkSource struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	current config.Network
	gateway config.Gateway
	stamp   string
}

func newNetworkSource(path string, initial config.Config, log *slog.Logger) *networkSource {
	n := &networkSource{path: path, log: log, current: initial.Network, gateway: initial.Gateway}
	n.stamp = config.Stamp(path)
	return n
}

// Get is the network section now.
func (n *networkSource) Get() config.Network {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reload()
	return n.current
}

// Gateway is the gateway section now. Where requests go (socket_path,
// upstreams) and whether it is on stay as the daemon started: a change
// there needs a restart, and is said.
func (n *networkSource) Gateway() config.Gateway {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reload()
	return n.gateway
}

// reload reads the file again when it changed (n.mu held).
func (n *networkSource) reload() {
	if n.path == "" {
		return
	}
	st := config.Stamp(n.path)
	if st == n.stamp {
		return
	}
	n.stamp = st
	c, err := config.Load(n.path)
	if err != nil {
		n.log.Error("network policy and gateway budgets not reloaded: the configuration does not parse; the last good ones stay in force", "err", err)
		return
	}
	n.current = c.Network
	g := c.Gateway
	if g.Enabled != n.gateway.Enabled || g.SocketPath != n.gateway.SocketPath || !maps.Equal(g.Upstreams, n.gateway.Upstreams) ||
		!slices.Equal(g.DirectAgents, n.gateway.DirectAgents) {
		n.log.Warn("gateway.enabled, socket_path, upstreams and direct_agents take effect at the daemon's next start; prices and budgets are in force now")
		g.Enabled, g.SocketPath, g.Upstreams, g.DirectAgents = n.gateway.Enabled, n.gateway.SocketPath, n.gateway.Upstreams, n.gateway.DirectAgents
	}
	n.gateway = g
	n.log.Info("network policy and gateway prices and budgets reloaded", "config", n.path)
}

// networkFor is a person's effective network set now.
func (d *Daemon) networkFor(ctx context.Context, user string) (config.NetworkSet, error) {
	return executorunit.NetworkFor(ctx, d.network.Get(), personPolicy(d.cfg.Execution), user)
}

// egressPerson names the account behind an egress connection: a person
// the daemon serves (min_uid, the allowed lists), with their network set.
func (d *Daemon) egressPerson(ctx context.Context, uid uint32) (egress.Person, error) {
	u, err := identity.Default().LookupUID(ctx, uid)
	if err != nil {
		return egress.Person{}, fmt.Errorf("uid %d: %w", uid, err)
	}
	pol := personPolicy(d.cfg.Execution)
	if _, err := pol.Check(ctx, u.Name); err != nil {
		return egress.Person{}, err
	}
	set, err := d.networkFor(ctx, u.Name)
	if err != nil {
		return egress.Person{}, err
	}
	return egress.Person{Name: u.Name, UID: uid, Set: set}, nil
}

// networkMode is user's mode now, or why it is not known.
func (d *Daemon) networkMode(ctx context.Context, user string) string {
	set, err := d.networkFor(ctx, user)
	if err != nil {
		return "unknown"
	}
	return set.Mode
}

func (d *Daemon) egressTotals() map[string]apiwire.ExecutorNetwork {
	out := map[string]apiwire.ExecutorNetwork{}
	for u, t := range d.egress.Totals() {
		out[u] = apiwire.ExecutorNetwork{BytesUp: t.BytesUp, BytesDown: t.BytesDown, Allowed: t.Allowed, Denied: t.Denied}
	}
	return out
}

// runningTask is the task running in person's session now: the label of
// an egress connection whose proxy credentials name the session. A
// session not theirs names nothing.
func (d *Daemon) runningTask(_ context.Context, p egress.Person, session string) string {
	s, err := d.store.GetSession(session)
	if err != nil || s.UnixUser != p.Name || (s.UID >= 0 && s.UID != int64(p.UID)) {
		return ""
	}
	tasks, err := d.store.ListTasks(session, 0, "")
	if err != nil {
		return ""
	}
	for i := len(tasks) - 1; i >= 0; i-- {
		if tasks[i].Status == store.Running {
			return tasks[i].ID
		}
	}
	return ""
}
