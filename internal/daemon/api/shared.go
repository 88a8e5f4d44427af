package api

import (
	"net/http"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ReasonSharedAccount: exec, files and terminals are off for persons in
// the shared account (run_as_unix_user: false).
const ReasonSharedAccount = "shared_account"

// ownAccount serves h when the caller's work runs in their own account.
// In the shared account everyone is that one account, so exec, files and
// terminals would let each person read the others' transcripts and keys
// (a warm agent's environment): they are off for persons unless the
// operator turned them on (SharedAccess). Admins act for anyone anyway.
func (s *Server) ownAccount(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.SharedAccount != "" && !s.SharedAccess && !s.caller(r).admin {
			writeError(w, rpc.Errorf(protocol.CodePermissionDenied, ReasonSharedAccount,
				"exec, files and terminals are off: every person's work runs as %s, so they would reach each other's (execution.shared_account_access turns them on)", s.SharedAccount))
			return
		}
		h(w, r)
	}
}
