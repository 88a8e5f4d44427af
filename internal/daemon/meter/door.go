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
// now, of that uid. A credential of an ended task is refused though its
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
	task, err := m.Store.RunningTaskOf(claim.Session)
	switch {
	case errors.Is(err, store.ErrNotFound):
		why = "its task has ended (no task of its session runs)"
	case err != nil:
		why = "the store could not say whether its task runs: " + err.Error()
	case task.ID != claim.Task:
		why = fmt.Sprintf("its task has ended (its session runs task %s now)", task.ID)
	case task.UID != int64(claim.UID):
		why = fmt.Sprintf("its task runs as uid %d", task.UID)
	}
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

// refused audits a credential turned away; a flood of one kind is one
// record a window (Aggregate).
func (m *Meter) refused(person string, c Claim, why string) {
	m.log().Info("gateway: credential refused", "user", person, "task", c.Task, "session", c.Session, "reason", why)
	if m.Audit != nil {
		m.Audit.Aggregate(audit.Record{Action: audit.GatewayRefused, User: person, Session: c.Session, Task: c.Task, Reason: why})
	}
}
