package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// credentialOwner is whose slot a request names: the caller's own
// account (name and uid), or daemon-wide for an admin who asks for it.
func (s *Server) credentialOwner(r *http.Request, scope string) (credstore.Owner, error) {
	c := s.caller(r)
	switch scope {
	case apiwire.ScopeDaemon:
		if !c.anyone() {
			return credstore.Owner{}, s.adminOnly("set daemon-wide keys")
		}
		return credstore.Daemon, nil
	case "", apiwire.ScopeUser:
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
	var body apiwire.CredentialBody
	q := s.quotas()
	// JSON may escape each byte of the value in six: read that much.
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 6*q.MaxCredentialBytes+4096)).Decode(&body); err != nil {
		writeError(w, credentialDecodeErr(err, q.MaxCredentialBytes))
		return
	}
	if n := int64(len(body.Value)); n > q.MaxCredentialBytes {
		writeError(w, overQuota(ReasonCredentialTooLarge, "max_credential_bytes", q.MaxCredentialBytes, fmt.Sprintf("a value of %d bytes", n)))
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
	if err := s.credentialQuota(r, owner, name); err != nil {
		writeError(w, err)
		return
	}
	if err := s.Creds.Set(owner, name, body.Value); err != nil {
		writeError(w, err)
		return
	}
	s.Audit.Log(credentialRecord("credential_set", owner, name))
	writeJSON(w, http.StatusOK, apiwire.CredentialSet{Name: name, Scope: scopeName(owner)})
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
	writeJSON(w, http.StatusOK, apiwire.CredentialDeleted{Name: name, Deleted: true})
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
		return apiwire.ScopeDaemon
	}
	return apiwire.ScopeUser
}

// credentialQuota checks an account's key before it is stored: the
// account passes the execution policy (an account that may never run
// work gets nothing stored; root, who is trusted, is not asked), and a
// new name fits its count.
func (s *Server) credentialQuota(r *http.Request, owner credstore.Owner, name string) error {
	if owner.Name == "" {
		return nil // daemon-wide: admins only
	}
	if c := s.caller(r); !c.trusted() {
		if _, err := s.resolve(r.Context(), c, owner.Name); err != nil {
			return err
		}
	}
	max := s.quotas().MaxCredentialsPerUser
	if names := s.Creds.Names(owner); len(names) >= max && !slices.Contains(names, name) {
		return overQuota(ReasonTooManyCredentials, "max_credentials_per_user", int64(max), fmt.Sprintf("%s has %d keys", owner.Name, len(names)))
	}
	return nil
}

func credentialDecodeErr(err error, max int64) error {
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		return overQuota(ReasonCredentialTooLarge, "max_credential_bytes", max, "a larger value")
	}
	return rpc.InvalidParams("body", err.Error())
}
