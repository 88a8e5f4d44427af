package broker

import (
	"context"
	"errors"

	"github.com/agor-sh/agor/internal/audit"
	"github.com/agor-sh/agor/internal/credstore"
	"github.com/agor-sh/agor/internal/rpc"
)

type keyParams struct {
	SessionToken  string `json:"session_token"`
	CredentialKey string `json:"credential_key"`
}

func (p keyParams) Validate() error {
	if p.SessionToken == "" {
		return rpc.InvalidParams("session_token", "required")
	}
	if err := credstore.ValidName(p.CredentialKey); err != nil {
		return rpc.InvalidParams("credential_key", err.Error())
	}
	return nil
}

type keyResult struct {
	APIKey string `json:"api_key"`
}

// getAPIKey hands a credential to the agent just in time. The audit
// record names the credential and where it came from, never its value.
func (c *conn) getAPIKey(_ context.Context, p keyParams) (keyResult, error) {
	rec := audit.Record{Action: audit.APIKeyRefused, User: c.user, Credential: p.CredentialKey}
	bind, rerr := c.check(p.SessionToken, "")
	if rerr != nil {
		rec.Reason = rerr.Reason()
		c.b.audit.Log(rec)
		return keyResult{}, rerr
	}
	rec.Session, rec.Task = bind.Session, bind.Task
	val, scope, err := c.b.keys.Get(c.user, p.CredentialKey)
	if err != nil {
		rerr := c.keyError(p.CredentialKey, err)
		rec.Reason = rerr.Reason()
		c.b.audit.Log(rec)
		return keyResult{}, rerr
	}
	rec.Action, rec.Reason = audit.APIKeyIssued, scope+"_credential"
	c.b.audit.Log(rec)
	c.b.stats.keysIssued.Add(1)
	return keyResult{APIKey: val}, nil
}

func (c *conn) keyError(name string, err error) *rpc.Error {
	var e *rpc.Error
	switch {
	case errors.Is(err, credstore.ErrNotFound):
		e = rpc.Errorf(rpc.CodeNotFound, "credential_not_found",
			"credential %q is not set for user %q nor daemon-wide", name, c.user)
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
