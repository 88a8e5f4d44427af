package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// conn is the state of one executor connection.
type conn struct {
	b    *Broker
	user string
	log  *slog.Logger
	lim  *rate.Limiter
	ev   eventTokens

	// A flood must not become a flood of log lines: warn at most once a
	// second, saying how many were refused since the last warning.
	warnThrottle   rate.Sometimes
	throttledSince atomic.Int64
	warnDropped    rate.Sometimes
}

// Handler returns the handler for one connection to the executor of unix
// user user. Each call makes a fresh rate limiter, so one executor's flood
// cannot use up another's allowance. Everything on the connection is
// user's word (user can take the executor's end over): each token is
// checked against user, and what a request asks counts for user only.
func (b *Broker) Handler(user string) rpc.Handler {
	c := &conn{
		b: b, user: user, log: b.log.With("user", user),
		lim:          rate.NewLimiter(b.limits.Rate, b.limits.Burst),
		ev:           eventTokens{seen: map[[32]byte]verified{}},
		warnThrottle: rate.Sometimes{Interval: time.Second},
		warnDropped:  rate.Sometimes{Interval: time.Second},
	}
	m := rpc.NewMux()
	m.Register(protocol.MethodGetAPIKey, c.limited(rpc.Method(c.getAPIKey)))
	m.Register(protocol.MethodRequestPermission, c.limited(rpc.Method(c.requestPermission)))
	// The event stream is not charged to the request bucket: dropping
	// events would lose the transcript; the rpc queue pushes back instead.
	m.Register(protocol.MethodReportMessage, c.reportMessage)
	return m
}

// limited refuses a request at once when the connection is over its rate.
func (c *conn) limited(h rpc.HandlerFunc) rpc.HandlerFunc {
	return func(ctx context.Context, r *rpc.Request) (any, error) {
		if !c.lim.Allow() {
			return nil, c.throttle()
		}
		return h(ctx, r)
	}
}

func (c *conn) throttle() error {
	c.b.stats.throttled.Add(1)
	c.throttledSince.Add(1)
	c.b.audit.Aggregate(audit.Record{Action: audit.RateLimited, User: c.user, Reason: "too_many_requests"})
	c.warnThrottle.Do(func() {
		c.log.Warn("executor over its request rate; refusing requests",
			"refused", c.throttledSince.Swap(0), "rate", float64(c.b.limits.Rate), "burst", c.b.limits.Burst)
	})
	return rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyRequests,
		"too many requests: limit %g/s, burst %d", float64(c.b.limits.Rate), c.b.limits.Burst)
}

// check validates a session token for this connection's user (and task,
// when given) and counts a use. The user is never left open: a token of
// bob's presented on alice's executor is refused.
func (c *conn) check(tok, task string) (token.Binding, *rpc.Error) {
	if c.user == "" {
		return token.Binding{}, tokenError(token.ErrMismatch)
	}
	bind, err := c.b.tokens.Check(tok, token.Binding{User: c.user, Task: task})
	if err != nil {
		c.b.stats.tokenRefused.Add(1)
		return token.Binding{}, tokenError(err)
	}
	return bind, nil
}

func tokenError(err error) *rpc.Error {
	return rpc.Errorf(protocol.CodeTokenInvalid, tokenReason(err), "session token invalid: %v", err)
}

func tokenReason(err error) string {
	switch {
	case errors.Is(err, token.ErrExpired):
		return "token_expired"
	case errors.Is(err, token.ErrUsedUp):
		return "token_used_up"
	case errors.Is(err, token.ErrMismatch):
		return "token_mismatch"
	}
	return "token_unknown"
}
