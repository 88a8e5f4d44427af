package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// queryAudit returns the trail: admins everything (or ?user=), users
// their own records only.
func (s *Server) queryAudit(w http.ResponseWriter, r *http.Request) {
	c := s.caller(r)
	q := r.URL.Query()
	f := audit.Filter{User: q.Get("user"), Task: q.Get("task"), Action: audit.Action(q.Get("action"))}
	if !c.anyone() { // their own, not an earlier account's of the same name
		f.User, f.UID = c.user.Name, audit.UIDOf(c.user.UID)
	}
	var err error
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 0 {
			writeError(w, rpc.InvalidParams("limit", "must be a non-negative integer"))
			return
		}
	}
	if v := q.Get("since"); v != "" {
		if f.Since, err = time.Parse(time.RFC3339, v); err != nil {
			writeError(w, rpc.InvalidParams("since", "must be an RFC 3339 time"))
			return
		}
	}
	writeJSON(w, http.StatusOK, apiwire.AuditList{Records: auditViews(s.Audit.Query(f))})
}

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

// notFound turns the stores' "not there" errors into the API's not found.
func notFound(err error, reason string) error {
	if errors.Is(err, credstore.ErrNotFound) || errors.Is(err, broker.ErrNotPending) {
		return rpc.Errorf(protocol.CodeNotFound, reason, "%v", err)
	}
	return err
}

// auditViews are records as the API shows them (nil stays null).
func auditViews(recs []audit.Record) []apiwire.AuditRecord {
	var out []apiwire.AuditRecord
	for _, r := range recs {
		out = append(out, apiwire.AuditRecord{Time: r.Time, Action: string(r.Action), User: r.User, UID: uidView(r.UID), StoredUID: uidView(r.StoredUID),
			Session: r.Session, Task: r.Task, Credential: r.Credential, Tool: r.Tool, Mode: r.Mode, Sandbox: r.Sandbox, Decision: r.Decision,
			Reason: r.Reason, Path: r.Path, Bytes: r.Bytes, Host: r.Host, Port: r.Port, Address: r.Address, BytesUp: r.BytesUp,
			BytesDown: r.BytesDown, Count: r.Count})
	}
	return out
}

func uidView(u audit.UID) *uint32 {
	if uid, ok := u.Get(); ok {
		return &uid
	}
	return nil
}
