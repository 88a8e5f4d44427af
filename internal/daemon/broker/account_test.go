package broker

import (
	"context"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestKeyOfEarlierAccount: alice's key was stored while "alice" was uid
// 1000; a task of the alice who is uid 2000 now does not get it (not
// found), gets the daemon-wide key only, and each refusal is audited as
// an account mismatch naming both uids.
func TestKeyOfEarlierAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tok, err := e.b.StartTask(token.Binding{User: "alice", Session: "s1", Task: "t1", UID: 2000}, ModeDefault, "")
	must(t, err)
	c := e.executor(t, "alice")
	ctx := context.Background()

	key, err := getKey(ctx, c, tok, "ANTHROPIC_API_KEY")
	wantRPC(t, err, protocol.CodeNotFound, "credential_not_found")
	if key != "" {
		t.Fatalf("the new alice got %q", key)
	}
	key, err = getKey(ctx, c, tok, "OPENAI_API_KEY")
	wantRPC(t, err, 0, "")
	if key != daemonKey {
		t.Fatalf("daemon-wide key = %q", key)
	}

	got := e.audit.Query(audit.Filter{Action: audit.AccountMismatch})
	if len(got) != 1 {
		t.Fatalf("account_mismatch records = %+v, want 1 (only ANTHROPIC_API_KEY has a stale key)", got)
	}
	r := got[0]
	if r.User != "alice" || r.UID != audit.UIDOf(2000) || r.StoredUID != audit.UIDOf(1000) || r.Credential != "ANTHROPIC_API_KEY" || r.Task != "t1" {
		t.Errorf("record = %+v", r)
	}
	issued := e.audit.Query(audit.Filter{Action: audit.APIKeyIssued})
	if len(issued) != 1 || issued[0].UID != audit.UIDOf(2000) || issued[0].Reason != "daemon_credential" {
		t.Errorf("issued = %+v", issued)
	}
}
