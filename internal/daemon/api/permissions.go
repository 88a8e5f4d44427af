package api

import (
	"encoding/json"
	"net/http"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// The permission questions agents ask (the broker holds them): listed for
// whom the caller sees, answered by whom they are for or an admin.

// listPermissions shows open permission requests: a user's own, or all
// for an admin.
func (s *Server) listPermissions(w http.ResponseWriter, r *http.Request) {
	c := s.caller(r)
	out := []apiwire.PermissionRequest{}
	for _, p := range s.Broker.Pending() {
		if c.sees(p.User) {
			out = append(out, p)
		}
	}
	writeJSON(w, http.StatusOK, apiwire.PermissionList{Permissions: out})
}

func (s *Server) decidePermission(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.caller(r).sees(s.permissionOwner(id)) {
		writeError(w, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no open permission request %q of yours", id))
		return
	}
	var d apiwire.PermissionDecision
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&d); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	if err := s.Broker.Decide(id, d.Approved, d.Reason, d.Scope); err != nil {
		writeError(w, notFound(err, "not_pending"))
		return
	}
	writeJSON(w, http.StatusOK, apiwire.PermissionDecided{ID: id, Approved: d.Approved})
}

// permissionOwner is the person open permission request id is for; ""
// when none is open (which only an admin sees).
func (s *Server) permissionOwner(id string) string {
	for _, p := range s.Broker.Pending() {
		if p.ID == id {
			return p.User
		}
	}
	return ""
}
