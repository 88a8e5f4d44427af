package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// requestPermission settles a request by the task's mode or waits for a
// person through the queue.
func (c *conn) requestPermission(ctx context.Context, p protocol.RequestPermissionParams) (Decision, error) {
	rec := audit.Record{Action: audit.PermissionDecided, User: c.user, Task: p.TaskID, Tool: p.ToolName}
	bind, rerr := c.check(p.SessionToken, p.TaskID)
	if rerr != nil {
		rec.Decision, rec.Reason = "refused", rerr.Reason()
		c.b.audit.Log(rec)
		return Decision{}, rerr
	}
	rec.User, rec.Session = bind.Who(), bind.Session
	mode, ok := c.b.live(p.TaskID)
	if !ok {
		mode = ModeDefault // a token issued outside StartTask: ask a person
	}
	rec.Mode = string(mode)
	d, err := c.decide(ctx, bind, mode, p)
	rec.Decision, rec.Reason = decisionWord(d), d.Reason
	c.b.audit.Log(rec)
	return d, err
}

func (c *conn) decide(ctx context.Context, bind token.Binding, mode Mode, p protocol.RequestPermissionParams) (Decision, error) {
	person, session := bind.Who(), bind.Session
	if mode == ModeBypass {
		return Decision{Approved: true, Reason: "bypass_permissions"}, nil
	}
	req := PermissionRequest{User: person, Session: session, Task: p.TaskID, ToolName: p.ToolName, ToolInput: p.ToolInput, AskedAt: time.Now()}
	c.b.audit.Log(audit.Record{Action: audit.PermissionAsked, User: person, Session: session, Task: p.TaskID, Tool: p.ToolName, Mode: string(mode)})
	d, err := c.b.queue.ask(ctx, req, c.b.limits.PermissionTimeout)
	if errors.Is(err, ErrTooManyOpen) {
		return Decision{Reason: "too_many_pending"}, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyPending,
			"too many open permission requests for user %q (limit %d)", person, c.b.limits.MaxPending)
	}
	return d, err
}

func decisionWord(d Decision) string {
	if d.Approved {
		return "approved"
	}
	return "denied"
}

// Pending lists the open permission requests, oldest first. The client
// API shows a user their own and an admin everyone's.
func (b *Broker) Pending() []PermissionRequest { return b.queue.list() }

// Decide answers the open request id. It fails with ErrNotPending when the
// request was already answered, timed out or was withdrawn.
func (b *Broker) Decide(id string, approved bool, reason, scope string) error {
	if err := b.queue.resolve(id, Decision{Approved: approved, Reason: reason, Scope: scope}); err != nil {
		return fmt.Errorf("decide %q: %w", id, err)
	}
	return nil
}

// Subscribe follows permission requests as they are asked and resolved,
// buffering up to buf events; a subscriber that falls further behind is
// cut off and should re-read Pending. Close it when done.
func (b *Broker) Subscribe(buf int) *PermissionFeed { return b.queue.subscribe(buf) }
