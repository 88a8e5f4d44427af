package api

import (
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
