package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ReasonUserDatabase: the user database did not answer about the caller.
const ReasonUserDatabase = "user_database_unavailable"

// ReasonConfinedCaller: the caller runs inside a sandboxed task.
const ReasonConfinedCaller = "confined_caller"

// who is the caller: the kernel's word (SO_PEERCRED, or the bearer token's
// account) and the account the user database has for that uid.
type who struct {
	cred  peer.Cred
	user  identity.User
	admin bool // root, or in the admin group
}

type whoKey struct{}

func (s *Server) accounts() *identity.Resolver {
	if s.Accounts != nil {
		return s.Accounts
	}
	return identity.Default()
}

// identify names every caller before any route runs. A caller whose uid
// has no account, or whom the user database cannot name now, is refused
// here: no route ever sees a caller without a name, which some would take
// for "everyone".
func (s *Server) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w2, err := s.lookupCaller(r.Context())
		if err == nil && r.URL.Path != "/v1/health" {
			err = s.unconfined(w2)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, w2)))
	})
}

func (s *Server) lookupCaller(ctx context.Context) (who, error) {
	cred, ok := peer.FromContext(ctx)
	if !ok {
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonUnknownCaller, "caller's credentials unknown")
	}
	u, err := s.accounts().LookupUID(ctx, cred.UID)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonUnknownCaller, "uid %d has no account on this host", cred.UID)
	case err != nil:
		s.log().Warn("caller not identified", "uid", cred.UID, "err", err)
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, ReasonUserDatabase, "the user database did not answer for uid %d; try again", cred.UID)
	}
	w := who{cred: cred, user: u, admin: cred.UID == 0}
	if !w.admin && s.AdminGroup != "" {
		in, err := s.accounts().InGroup(ctx, u, s.AdminGroup)
		if err != nil {
			return who{}, rpc.Errorf(protocol.CodePermissionDenied, ReasonUserDatabase, "the user database did not answer for the groups of %q; try again", u.Name)
		}
		w.admin = in
	}
	return w, nil
}

// caller is who is asking (identify has run: always known).
func (s *Server) caller(r *http.Request) who {
	w, _ := r.Context().Value(whoKey{}).(who)
	return w
}

// unconfined refuses a caller that runs inside a sandboxed task of its
// executor's: whatever it asked (an exec with --sandbox off, a file put
// outside its workspace, a terminal), the daemon would do unconfined what
// the sandbox refused it. Only reachable when the operator lets confined
// work open Unix sockets (sandbox.unix_sockets); the check stands anyway.
func (s *Server) unconfined(c who) error {
	if c.cred.PID <= 0 || c.cred.UID == 0 || s.Pool == nil {
		return nil
	}
	pid, ok := s.Pool.PID(s.executorOf(c.user.Name))
	if ok && sandbox.Confined(int(c.cred.PID), pid) {
		s.log().Warn("request from inside a sandboxed task refused", "user", c.user.Name, "peer_pid", c.cred.PID)
		return rpc.Errorf(protocol.CodePermissionDenied, ReasonConfinedCaller,
			"this request comes from inside a sandboxed task (pid %d): the daemon does not act for confined work", c.cred.PID)
	}
	return nil
}
