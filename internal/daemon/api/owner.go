package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Stored data belongs to an account: a user name and the uid the name
// had when the data was stored. A name given to someone else later (the
// account deleted, the name reused with another uid) inherits nothing:
// the data is not found, and the refusal is audited as account_mismatch.

func errNotFound() error {
	return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "not found") // not "forbidden": do not confirm it exists
}

// visible checks that the caller may see data name stored under uid: an
// admin sees everything (orphans included); a user sees their own name's
// data stored under their own uid. ref names the data for the audit.
func (s *Server) visible(r *http.Request, name string, uid int64, ref audit.Record) error {
	c := s.caller(r)
	switch {
	case c.admin:
		return nil
	case c.user.Name != name:
		return errNotFound()
	case uid != int64(c.user.UID):
		s.mismatch(ref, name, audit.UIDOf(c.user.UID), uid)
		return errNotFound()
	}
	return nil
}

// current checks, before acting on data (a prompt to a session, a stop),
// that name is still the account the data was stored under: admins too
// may not run an earlier account's session as the name's new owner.
func (s *Server) current(ctx context.Context, name string, uid int64, ref audit.Record) error {
	u, err := s.accounts().LookupName(ctx, name)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		s.mismatch(ref, name, audit.UID{}, uid)
		return errNotFound()
	case err != nil:
		return errUserDatabase(err)
	case int64(u.UID) != uid:
		s.mismatch(ref, name, audit.UIDOf(u.UID), uid)
		return errNotFound()
	}
	return nil
}

func errUserDatabase(err error) error {
	return rpc.Errorf(rpc.CodeInternalError, ReasonUserDatabase, "the user database did not answer: %v; try again", err)
}

// mismatch audits a refusal: data of name stored under stored, asked for
// by (or for) the account that has the name now (now; none when no
// account has it).
func (s *Server) mismatch(ref audit.Record, name string, now audit.UID, stored int64) {
	s.log().Warn("data of an earlier account of this name refused", "user", name, "uid", now.String(), "stored_uid", stored)
	if s.Audit == nil {
		return
	}
	ref.Action, ref.User, ref.UID, ref.StoredUID = audit.AccountMismatch, name, now, audit.StoredUID(stored)
	s.Audit.Log(ref)
}
