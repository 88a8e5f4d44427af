package meter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/peer"
)

// errToken is every refusal of a credential, as the client sees it: the
// reason goes to the audit trail, not to whoever presented it.
var errToken = errors.New("not a live gateway credential of this caller")

// door is the running task tok names, and its session, or why not (each
// refusal audited as gateway_refused): tok must be a credential this
// daemon signed, relayed by an executor of the uid it names (the
// socket's SO_PEERCRED), for a task that is its session's running task
// now, run by an executor of that uid (runsAs: the person's, or the
// shared account's). A credential of an ended task is refused though its
// session runs another; one of the old kind (a session's, agor-gw1) is
// refused whatever it names.
func (m *Meter) door(ctx context.Context, tok string) (store.Task, store.Session, error) {
	cred, known := peer.FromContext(ctx)
	claim, ok := m.Signer.Read(tok)
	from := "from an unknown peer"
	if known {
		from = fmt.Sprintf("from uid %d", cred.UID)
	}
	var why string
	switch {
	case tok == "":
		why = "no credential: the request did not come through an executor's relay"
	case strings.HasPrefix(tok, legacyPrefix):
		why = "a session token of the old kind (agor-gw1): agents hold none now, and none is accepted"
	case !ok:
		why = "not a credential this daemon signed"
	case !known:
		why = "no peer credentials on the connection"
	case cred.UID != claim.UID:
		why = fmt.Sprintf("the credential of uid %d's task, relayed by another account", claim.UID)
	}
	if why != "" {
		m.refused("", claim, why+" ("+from+")")
		return store.Task{}, store.Session{}, errToken
	}
	task, why := m.running(ctx, claim)
	if why != "" {
		m.refused(task.UnixUser, claim, why+" ("+from+")")
		return store.Task{}, store.Session{}, errToken
	}
	sess, err := m.Store.GetSession(claim.Session)
	if err != nil {
		m.refused(task.UnixUser, claim, "its session is gone ("+from+")")
		return store.Task{}, store.Session{}, errToken
	}
	return task, sess, nil
}

// running is the task claim names if it is its session's running task
// and runs as the claim's uid, else why not.
func (m *Meter) running(ctx context.Context, claim Claim) (store.Task, string) {
	task, err := m.Store.RunningTaskOf(claim.Session)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return task, "its task has ended (no task of its session runs)"
	case err != nil:
		return task, "the store could not say whether its task runs: " + err.Error()
	case task.ID != claim.Task:
		return task, fmt.Sprintf("its task has ended (its session runs task %s now)", task.ID)
	}
	uid, err := m.runsAs(ctx, task)
	switch {
	case err != nil:
		return task, "the account its task runs as is not known: " + err.Error()
	case uid != int64(claim.UID):
		return task, fmt.Sprintf("its task runs as uid %d", uid)
	}
	return task, ""
}

// runsAs is the uid of the executor that runs task: RunsAs's answer, or
// without it the task's person's uid.
func (m *Meter) runsAs(ctx context.Context, task store.Task) (int64, error) {
	if m.RunsAs == nil {
		return task.UID, nil
	}
	return m.RunsAs(ctx, task)
}

// refused audits a credential turned away; a flood of one kind is one
// record a window (Aggregate).
func (m *Meter) refused(person string, c Claim, why string) {
	m.log().Info("gateway: credential refused", "user", person, "task", c.Task, "session", c.Session, "reason", why)
	if m.Audit != nil {
		m.Audit.Aggregate(audit.Record{Action: audit.GatewayRefused, User: person, Session: c.Session, Task: c.Task, Reason: why})
	}
}
