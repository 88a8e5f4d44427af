package executorunit

import (
	"context"
	"math"
	"strings"

	"golang.org/x/sync/errgroup"
)

// DefaultUsageWorkers is how many D-Bus calls Usage has in flight at once
// by default: enough that 100 executors (500 properties) cost a few round
// trips, not 500.
const DefaultUsageWorkers = 64

// usageProps are the service unit's counters (systemd.resource-control(5)),
// each UINT64_MAX when systemd cannot count it for the unit.
var usageProps = []struct {
	name string
	why  string // why systemd has no number
	set  func(*Usage, *uint64)
}{
	{"MemoryCurrent", "memory: systemd reports none (no memory controller for the unit here)", func(u *Usage, v *uint64) { u.MemoryBytes = v }},
	{"CPUUsageNSec", "cpu: systemd reports none (no cpu accounting for the unit here)", func(u *Usage, v *uint64) { u.CPUNSec = v }},
	{"TasksCurrent", "tasks: systemd reports none (no pids controller for the unit here)", func(u *Usage, v *uint64) { u.Tasks = v }},
	{"IOReadBytes", "io_read: IOAccounting is off for the unit", func(u *Usage, v *uint64) { u.IOReadBytes = v }},
	{"IOWriteBytes", "io_write: IOAccounting is off for the unit", func(u *Usage, v *uint64) { u.IOWriteBytes = v }},
}

// Usage reads each user's service unit's counters over D-Bus, with up to
// UsageWorkers Get calls in flight, so the cost is a few round trips
// rather than one per property. A user whose unit is not known to systemd
// is left out.
func (s *Systemd) Usage(ctx context.Context, users []string) (map[string]Usage, error) {
	conn, err := s.bus(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Usage, len(users))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.usageWorkers())
	vals := make([][]*uint64, len(users))
	mains := make([]uint32, len(users))
	for i, user := range users {
		vals[i] = make([]*uint64, len(usageProps))
		for j, p := range usageProps {
			g.Go(func() error {
				prop, err := conn.GetServicePropertyContext(gctx, unitName(user, "service"), p.name)
				if err != nil {
					return s.dbusErr("usage of "+user, err)
				}
				if v, ok := prop.Value.Value().(uint64); ok && v != math.MaxUint64 {
					vals[i][j] = &v // each call its own slot
				}
				return nil
			})
		}
		g.Go(func() error {
			prop, err := conn.GetServicePropertyContext(gctx, unitName(user, "service"), "MainPID")
			if err != nil {
				return s.dbusErr("usage of "+user, err)
			}
			mains[i], _ = prop.Value.Value().(uint32)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var procs map[int]procStat // read once, only if a counter is missing
	for i, user := range users {
		u := Usage{Source: "systemd"}
		for j, p := range usageProps {
			p.set(&u, vals[i][j])
			if vals[i][j] == nil {
				u.Unavailable = append(u.Unavailable, p.why)
			}
		}
		if (u.MemoryBytes == nil || u.Tasks == nil) && mains[i] > 0 {
			if procs == nil {
				procs = readProcs("/proc")
			}
			u = fromProcTree(u, treeUsage(procs, int(mains[i])))
		}
		out[user] = u
	}
	return out, nil
}

// fromProcTree fills what systemd could not count (no memory or pids
// controller for the unit, as on hosts that do not delegate them) from
// the executor's process tree in /proc, and says so.
func fromProcTree(u, tree Usage) Usage {
	var still []string
	for _, why := range u.Unavailable {
		switch {
		case strings.HasPrefix(why, "memory:") && u.MemoryBytes == nil:
			u.MemoryBytes = tree.MemoryBytes
		case strings.HasPrefix(why, "tasks:") && u.Tasks == nil:
			u.Tasks = tree.Tasks
		default:
			still = append(still, why)
		}
	}
	u.Unavailable = still
	u.Source = "systemd+proc"
	return u
}

func (s *Systemd) usageWorkers() int {
	if s.UsageWorkers > 0 {
		return s.UsageWorkers
	}
	return DefaultUsageWorkers
}
