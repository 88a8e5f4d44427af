package broker

import (
	"context"
	"errors"
	"slices"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// apiKeyParams is get_api_key's params, the credential's name checked as
// the credential store names keys.
type apiKeyParams struct{ protocol.GetAPIKeyParams }

// Validate checks the fields.
func (p apiKeyParams) Validate() error {
	if err := p.GetAPIKeyParams.Validate(); err != nil {
		return err
	}
	if err := credstore.ValidName(p.CredentialKey); err != nil {
		return rpc.InvalidParams("credential_key", err.Error())
	}
	return nil
}

// getAPIKey hands a credential to the agent just in time. The audit
// record names the credential and where it came from, never its value.
func (c *conn) getAPIKey(_ context.Context, p apiKeyParams) (protocol.GetAPIKeyResult, error) {
	rec := audit.Record{Action: audit.APIKeyRefused, User: c.user, Credential: p.CredentialKey}
	bind, rerr := c.check(p.SessionToken, "")
	if rerr != nil {
		rec.Reason = rerr.Reason()
		c.b.audit.Log(rec)
		return protocol.GetAPIKeyResult{}, rerr
	}
	rec.User, rec.UID, rec.Session, rec.Task = bind.Who(), audit.UIDOf(bind.UID), bind.Session, bind.Task
	if slices.Contains(c.b.withheld, p.CredentialKey) && !slices.Contains(c.b.direct, bind.Tool) {
		rec.Reason = protocol.ReasonWithheld
		c.b.audit.Log(rec)
		return protocol.GetAPIKeyResult{}, rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonWithheld,
			"credential %q is put on model requests by the daemon's gateway, never handed out", p.CredentialKey)
	}
	key, err := c.b.keys.Get(credstore.User(bind.Who(), bind.UID), p.CredentialKey)
	c.staleKeys(rec, key.Stale)
	if err != nil {
		rerr := c.keyError(bind.Who(), p.CredentialKey, err)
		rec.Reason = rerr.Reason()
		c.b.audit.Log(rec)
		return protocol.GetAPIKeyResult{}, rerr
	}
	rec.Action, rec.Reason = audit.APIKeyIssued, key.Scope+"_credential"
	c.b.audit.Log(rec)
	c.b.stats.keysIssued.Add(1)
	return protocol.GetAPIKeyResult{APIKey: key.Value}, nil
}

// staleKeys audits the keys of the person's name that belong to earlier
// accounts of that name (other uids): they were not handed out.
func (c *conn) staleKeys(rec audit.Record, stale []int64) {
	for _, uid := range stale {
		r := rec
		r.Action, r.StoredUID, r.Reason = audit.AccountMismatch, audit.StoredUID(uid), "credential of another account of this name"
		c.b.audit.Log(r)
	}
}

func (c *conn) keyError(person, name string, err error) *rpc.Error {
	var e *rpc.Error
	switch {
	case errors.Is(err, credstore.ErrNotFound):
		e = rpc.Errorf(protocol.CodeNotFound, protocol.ReasonCredentialNotFound,
			"credential %q is not set for user %q nor daemon-wide", name, person)
	case errors.Is(err, credstore.ErrCorrupt):
		c.log.Error("credential cannot be decrypted", "credential", name, "err", err)
		e = rpc.Errorf(rpc.CodeInternalError, "credential_unreadable", "credential %q cannot be read", name)
	default:
		c.log.Error("credential store failed", "credential", name, "err", err)
		e = rpc.Errorf(rpc.CodeInternalError, "credential_store_error", "credential %q: store unavailable", name)
	}
	e.Data["credential"] = name
	return e
}
