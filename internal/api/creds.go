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

// credentialOwner is whose slot a request names: the caller's own name,
// or "" (daemon-wide) for an admin who asks for it.
func (s *Server) credentialOwner(r *http.Request, scope string) (string, error) {
	c := s.caller(r)
	switch scope {
	case "daemon":
		if !c.admin {
			return "", rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonAdminOnly, "only root and members of %q may set daemon-wide keys", s.AdminGroup)
		}
		return "", nil
	case "", "user":
		return c.user.Name, nil
	}
	return "", rpc.InvalidParams("scope", `must be "user" or "daemon"`)
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
	s.Audit.Log(audit.Record{Action: "credential_set", User: owner, Credential: name, Reason: scopeName(owner)})
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
		writeError(w, notFound(err, "credential_not_found"))
		return
	}
	s.Audit.Log(audit.Record{Action: "credential_deleted", User: owner, Credential: name, Reason: scopeName(owner)})
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "deleted": true})
}

func scopeName(owner string) string {
	if owner == "" {
		return "daemon"
	}
	return "user"
}
