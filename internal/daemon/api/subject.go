package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// subject is whom a request acts for, resolved once per request: the
// person, the uid their account has now, and the account whose executor
// runs their work (theirs, or the shared account). Routes read it from
// the request's context (subjectOf) instead of working it out again.
type subject struct {
	Person   string
	UID      uint32
	Executor string // an executor key (envdef.Key): the account, in Env
	Env      string // the environment ("": the host)
}

// account is the account whose executor runs the work, in any
// environment: what tokens are bound to and its connection speaks for.
func (t subject) account() string {
	a, _ := envdef.SplitKey(t.Executor)
	return a
}

type subjectKey struct{}

// resolve makes person's subject: a valid name, allowed by the execution
// policy (which looks the account up once, for its uid), and the
// executor account. The caller's right to act for person is the route's
// to check first (access.go).
func (s *Server) resolve(ctx context.Context, c who, person string) (subject, error) {
	if err := account.ValidName(person); err != nil {
		return subject{}, rpc.InvalidParams("user", err.Error())
	}
	return s.resolveValid(ctx, c, person)
}

// resolveValid is resolve of a name already validated.
func (s *Server) resolveValid(ctx context.Context, c who, person string) (subject, error) {
	t := subject{Person: person, Executor: s.executorOf(person)}
	var err error
	switch {
	case s.Admit != nil:
		t.UID, err = s.Admit(ctx, person)
		if err != nil {
			return subject{}, lifecycle.Unavailable(err)
		}
	case c.user.Name == person: // the caller's own: identify looked her up
		t.UID = c.user.UID
	default:
		t.UID, err = s.lookupUID(ctx, person)
	}
	return t, err
}

// lookupUID is the uid name's account has now, refused as the backend
// would refuse a name without one.
func (s *Server) lookupUID(ctx context.Context, name string) (uint32, error) {
	u, err := s.accounts().LookupName(ctx, name)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return 0, lifecycle.Unavailable(fmt.Errorf("%w: %q", executorunit.ErrNoSuchUser, name))
	case err != nil:
		return 0, errUserDatabase(err)
	}
	return u.UID, nil
}

// subjectOf is the subject forUser resolved.
func subjectOf(r *http.Request) subject {
	t, _ := r.Context().Value(subjectKey{}).(subject)
	return t
}

// forUser lets a user act on their own {user}, and admins on anyone's,
// and resolves the subject for the route.
func (s *Server) forUser(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := s.caller(r)
		name := r.PathValue("user")
		err := account.ValidName(name)
		if err != nil {
			err = rpc.InvalidParams("user", err.Error())
		} else if !c.actsFor(name) {
			err = errNotYourself()
		}
		var t subject
		if err == nil {
			t, err = s.resolveValid(r.Context(), c, name)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, t)))
	}
}
