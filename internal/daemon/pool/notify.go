package pool

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// An executor's notifications (report_message, exec_output,
// terminal_output, terminal_exit, file_event, warm_agents) are its user's
// word, and every one costs the daemon work on the connection's read
// loop. rpc bounds each to one line (1 MiB) and handles them one at a
// time, so a fast sender is pushed back through its socket; the pool
// also paces them per user, so one user's executor cannot take the
// daemon's CPU from everyone else. Pacing waits instead of dropping: a
// dropped notification would lose output or a transcript, and only the
// sender's own calls wait behind it.

// DefaultNotifyRate is a user's notifications a second: 4000 small ones,
// or about 250 MiB/s of large ones (see cost).
const DefaultNotifyRate rate.Limit = 4000

// DefaultNotifyBurst is the notifications a user may send at once.
const DefaultNotifyBurst = 8000

// costUnit is the size a notification costs one unit of the allowance
// per: a line of rpc's largest (1 MiB) costs 17, an output chunk 1 or 2.
const costUnit = 64 << 10

func cost(r *rpc.Request) int { return 1 + len(r.Raw)/costUnit }

// pacer is user's notification allowance; it outlives connections, so
// reconnecting does not refill it.
func (p *Pool) pacer(user string) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pacers == nil {
		p.pacers = map[string]*rate.Limiter{}
	}
	l := p.pacers[user]
	if l == nil {
		r, b := p.NotifyRate, p.NotifyBurst
		if r == 0 {
			r = DefaultNotifyRate
		}
		if b <= 0 {
			b = DefaultNotifyBurst
		}
		l = rate.NewLimiter(r, b)
		p.pacers[user] = l
	}
	return l
}

// paced makes user's notifications wait for their allowance before next
// handles them; requests pass at once (the broker limits its own).
func (p *Pool) paced(user string, next rpc.Handler) rpc.Handler {
	lim := p.pacer(user)
	var warned time.Time // read loop only: notifications are handled one at a time
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if !r.Notification {
			return next.Handle(ctx, r)
		}
		n := min(cost(r), lim.Burst())
		if !lim.AllowN(time.Now(), n) {
			if time.Since(warned) > time.Minute {
				warned = time.Now()
				p.log().Warn("executor over its notification rate; reading its connection slower",
					"user", user, "rate", float64(lim.Limit()), "burst", lim.Burst())
			}
			if err := lim.WaitN(ctx, n); err != nil {
				return nil, fmt.Errorf("notification %s not handled: %w", r.Method, err)
			}
		}
		return next.Handle(ctx, r)
	})
}
