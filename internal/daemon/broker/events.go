package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/secret"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// eventRecheck is how long a token checked for report_message is trusted
// before it is checked again. Checking each event would spend one of the
// token's uses per event, so a long transcript would use it up; rechecking
// now and then still enforces expiry, and EndTask ends trust at once.
const eventRecheck = time.Minute

// maxVerified bounds the per-connection cache of checked tokens.
const maxVerified = 256

type verified struct {
	task string
	at   time.Time
}

// eventTokens remembers tokens already checked for report_message.
type eventTokens struct {
	mu   sync.Mutex
	seen map[[32]byte]verified
}

// reportMessage stores one agent event. It is a notification: nothing can
// be answered, so refusals are counted, aggregated in the audit trail and
// logged at most once a second. What it stores counts toward the task's
// person's event bounds (quotas.max_event_bytes_per_task and _per_user,
// the sink's), never another's: the token names the task, the task its
// person. The daemon holds one line of it at a time (1 MiB, the rpc limit).
func (c *conn) reportMessage(_ context.Context, r *rpc.Request) (any, error) {
	var p protocol.ReportMessage
	if err := rpc.Bind(r.Params, &p); err != nil {
		c.dropEvent("invalid_params", err)
		return nil, err
	}
	if reason := c.eventToken(p.SessionToken, p.TaskID); reason != "" {
		c.dropEvent(reason, nil)
		return nil, rpc.Errorf(protocol.CodeTokenInvalid, reason, "session token invalid")
	}
	out, err := c.b.sink.Put(apiwire.StoredEvent{TaskID: p.TaskID, Sequence: p.Sequence, Timestamp: p.Timestamp, Type: p.EventType, Data: p.EventData})
	switch {
	case errors.Is(err, events.ErrInvalid):
		c.dropEvent("invalid_event", err)
	case err != nil:
		c.dropEvent("store_failed", err)
	case out == events.Duplicate:
		c.b.stats.eventsDuplicate.Add(1)
	case out == events.Capped: // over a quota: the sink said so once, in the task's events
		c.b.stats.eventsDropped.Add(1)
	default:
		c.b.stats.eventsStored.Add(1)
	}
	return nil, err
}

// eventToken returns "" when tok may report for task, else the reason.
func (c *conn) eventToken(tok, task string) string {
	h := secret.Hash(tok)
	if _, live := c.b.live(task); live && c.ev.trusted(h, task) {
		return ""
	}
	if _, rerr := c.check(tok, task); rerr != nil {
		return rerr.Reason()
	}
	c.ev.remember(h, task)
	return ""
}

func (e *eventTokens) trusted(h [32]byte, task string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.seen[h]
	return ok && v.task == task && time.Since(v.at) < eventRecheck
}

func (e *eventTokens) remember(h [32]byte, task string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) >= maxVerified {
		clear(e.seen) // rare: costs one extra check per live token
	}
	e.seen[h] = verified{task: task, at: time.Now()}
}

func (c *conn) dropEvent(reason string, err error) {
	c.b.stats.eventsDropped.Add(1)
	c.b.audit.Aggregate(audit.Record{Action: audit.EventRefused, User: c.user, Reason: reason})
	c.warnDropped.Do(func() {
		c.log.Warn("report_message dropped", "reason", reason, "err", err, "dropped_total", c.b.stats.eventsDropped.Load())
	})
}
