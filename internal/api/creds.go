package api

import (
	"encoding/json"
	"net/http"

	"github.com/agor-sh/agor/internal/audit"
	"github.com/agor-sh/agor/internal/credstore"
	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/rpc"
)

// credentialBody sets a key: the caller's own, or daemon-wide ("scope":
// "daemon", admins only). The value is write-only: no call returns it.
type credentialBody struct {
	Value string `json:"value"`
	Scope string `json:"scope"` // "user" (default) or "daemon"
}

// credentialOwner is whose slot a request names: the caller's own
// account (name and uid), or daemon-wide for an admin who asks for it.
func (s *Server) credentialOwner(r *http.Request, scope string) (credstore.Owner, error) {
	c := s.caller(r)
	switch scope {
	case "daemon":
		if !c.admin {
			return credstore.Owner{}, rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonAdminOnly, "only root and members of %q may set daemon-wide keys", s.AdminGroup)
		}
		return credstore.Daemon, nil
	case "", "user":
		return credstore.User(c.user.Name, c.user.UID), nil
	}
	return credstore.Owner{}, rpc.InvalidParams("scope", `must be "user" or "daemon"`)
}

// credentialRecord is an audit record of owner's credential name.
func credentialRecord(a audit.Action, owner credstore.Owner, name string) audit.Record {
	return audit.Record{Action: a, User: owner.Name, UID: audit.StoredUID(ownerUID(owner)), Credential: name, Reason: scopeName(owner)}
}

func ownerUID(o credstore.Owner) int64 {
	if o.Name == "" {
		return credstore.NoUID // daemon-wide: nobody's
	}
	return o.UID
}

func (s *Server) setCredential(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var body credentialBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&body); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	if err := credstore.ValidName(name); err != nil {
		writeError(w, rpc.InvalidParams("name", err.Error()))
		return
	}
	if body.Value == "" {
		writeError(w, rpc.InvalidParams("value", "must not be empty"))
		return
	}
	owner, err := s.credentialOwner(r, body.Scope)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.Creds.Set(owner, name, body.Value); err != nil {
		writeError(w, err)
		return
	}
	s.Audit.Log(credentialRecord("credential_set", owner, name))
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "scope": scopeName(owner)})
}

func (s *Server) deleteCredential(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	owner, err := s.credentialOwner(r, r.URL.Query().Get("scope"))
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.Creds.Delete(owner, name); err != nil {
		s.staleCredential(owner, name)
		writeError(w, notFound(err, "credential_not_found"))
		return
	}
	s.Audit.Log(credentialRecord("credential_deleted", owner, name))
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "deleted": true})
}

// staleCredential audits keys named name of earlier accounts of owner's
// name: the caller asked for one, and it is not theirs.
func (s *Server) staleCredential(owner credstore.Owner, name string) {
	if owner.Name == "" {
		return
	}
	k, _ := s.Creds.Get(owner, name)
	for _, uid := range k.Stale {
		s.mismatch(audit.Record{Credential: name}, owner.Name, audit.StoredUID(owner.UID), uid)
	}
}

func scopeName(owner credstore.Owner) string {
	if owner.Name == "" {
		return "daemon"
	}
	return "user"
}
