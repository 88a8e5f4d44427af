package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// This file is the one place the API decides access, as tailscale's
// localapi.Handler does with its Permit fields: identify names the
// caller once per request (who); whom she may act for and what she may
// see are who's methods (actsFor, sees, anyone); the route gates (admin,
// forUser, ownOrAdmin, ownAccount) and the checks on stored data
// (visible, current) ask them, and so does every listing. No route
// reads the caller's admin bit itself, and every refusal's reason is the
// wire's (apiwire.Reason*).

// who is the caller: the kernel's word (SO_PEERCRED, or the bearer token's
// account) and the account the user database has for that uid.
type who struct {
	cred  peer.Cred
	user  identity.User
	admin bool // root, or in the admin group
}

type whoKey struct{}

// anyone: the caller acts for anyone and sees everything (root and the
// admin group).
func (c who) anyone() bool { return c.admin }

// actsFor: the caller may act for person: herself, or anyone for an admin.
func (c who) actsFor(person string) bool { return c.admin || c.user.Name == person }

// sees: the caller may see what is listed under person's name (an
// executor, a permission question, a metric series). Stored data also
// carries a uid: visible checks that.
func (c who) sees(person string) bool { return c.actsFor(person) }

// trusted: root, whom neither the execution policy nor the sandbox check
// asks.
func (c who) trusted() bool { return c.cred.UID == 0 }

// errNotYourself is the one refusal of a person acting for another.
func errNotYourself() error {
	return rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonNotYourself, "you may act only as yourself")
}

// adminOnly refuses what only root and the admin group may do.
func (s *Server) adminOnly(what string) error {
	return rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonAdminOnly, "only root and members of %q may %s", s.AdminGroup, what)
}

func errNotFound() error {
	return rpc.Errorf(protocol.CodeNotFound, apiwire.ReasonNotFound, "not found") // not "forbidden": do not confirm it exists
}

func errUserDatabase(err error) error {
	return rpc.Errorf(rpc.CodeInternalError, apiwire.ReasonUserDatabase, "the user database did not answer: %v; try again", err)
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
		if err == nil && r.URL.Path != "/v1/health" {
			err = s.tcpUnconfined(r)
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
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonUnknownCaller, "caller's credentials unknown")
	}
	u, err := s.accounts().LookupUID(ctx, cred.UID)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonUnknownCaller, "uid %d has no account on this host", cred.UID)
	case err != nil:
		s.log().Warn("caller not identified", "uid", cred.UID, "err", err)
		return who{}, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonUserDatabase, "the user database did not answer for uid %d; try again", cred.UID)
	}
	w := who{cred: cred, user: u, admin: cred.UID == 0}
	if !w.admin && s.AdminGroup != "" {
		in, err := s.accounts().InGroup(ctx, u, s.AdminGroup)
		if err != nil {
			return who{}, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonUserDatabase, "the user database did not answer for the groups of %q; try again", u.Name)
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
// A TCP caller is asked the same by tcpUnconfined.
func (s *Server) unconfined(c who) error {
	if c.cred.PID <= 0 || c.trusted() || s.Pool == nil {
		return nil
	}
	for _, key := range s.Pool.LiveOf(s.executorOf(c.user.Name)) { // on the host and in environments
		pid, ok := s.Pool.PID(key)
		if ok && sandbox.Confined(int(c.cred.PID), pid) {
			s.log().Warn("request from inside a sandboxed task refused", "user", c.user.Name, "peer_pid", c.cred.PID, "executor", key)
			return rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonConfinedCaller,
				"this request comes from inside a sandboxed task (pid %d): the daemon does not act for confined work", c.cred.PID)
		}
	}
	return nil
}

// whoami says who the daemon takes the caller for: their account and
// whether they act for anyone (root, api.admin_group). A page or a
// script asks this rather than guessing from what another request lets
// through (a person may list her own executor, not only an admin).
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	c := s.caller(r)
	writeJSON(w, http.StatusOK, apiwire.Whoami{User: c.user.Name, UID: c.user.UID, Admin: c.anyone()})
}

// admin lets root and the admin group through.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.caller(r).anyone() {
			writeError(w, s.adminOnly("do this"))
			return
		}
		h(w, r)
	}
}

// ownOrAdmin lets a person stop her own executor and admins anyone's.
// Unlike forUser it does not apply the execution policy: an admin stops
// the executor of someone the policy no longer lets in. With a shared
// account a person's executor is everyone's, so stopping it is the
// admins' alone.
func (s *Server) ownOrAdmin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := s.caller(r)
		switch {
		case c.anyone():
		case !c.actsFor(r.PathValue("user")):
			writeError(w, errNotYourself())
			return
		case s.SharedAccount != "":
			writeError(w, s.adminOnly(fmt.Sprintf("stop %q's executor, which runs everyone's work", s.SharedAccount)))
			return
		}
		h(w, r)
	}
}

// ownAccount serves h when the caller's work runs in their own account.
// In the shared account everyone is that one account, so exec, files and
// terminals would let each person read the others' transcripts and keys
// (a warm agent's environment): they are off for persons unless the
// operator turned them on (SharedAccess). Admins act for anyone anyway.
func (s *Server) ownAccount(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.SharedAccount != "" && !s.SharedAccess && !s.caller(r).anyone() {
			writeError(w, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonSharedAccount,
				"exec, files and terminals are off: every person's work runs as %s, so they would reach each other's (execution.shared_account_access turns them on)", s.SharedAccount))
			return
		}
		h(w, r)
	}
}

// executorsSeen is what of list the caller sees: everyone's for an admin;
// for a person her own executor's entry, or a stopped one when its units
// are not loaded. With a shared account she sees none: that executor is
// everyone's.
func (s *Server) executorsSeen(c who, list []executorunit.Status) []executorunit.Status {
	switch {
	case c.anyone():
		return list
	case s.SharedAccount != "":
		return nil
	}
	var out []executorunit.Status
	host := false
	for _, st := range list { // hers on the host, and in any environment
		if account, env := envdef.SplitKey(st.User); c.sees(account) {
			out = append(out, st)
			host = host || env == ""
		}
	}
	if !host {
		out = append([]executorunit.Status{{User: c.user.Name, Socket: "inactive", Service: "inactive"}}, out...)
	}
	return out
}

// Stored data belongs to an account: a user name and the uid the name
// had when the data was stored. A name given to someone else later (the
// account deleted, the name reused with another uid) inherits nothing:
// the data is not found, and the refusal is audited as account_mismatch.

// visible checks that the caller may see data name stored under uid: an
// admin sees everything (orphans included); a user sees their own name's
// data stored under their own uid. ref names the data for the audit.
func (s *Server) visible(r *http.Request, name string, uid int64, ref audit.Record) error {
	c := s.caller(r)
	switch {
	case c.anyone():
		return nil
	case !c.sees(name):
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
