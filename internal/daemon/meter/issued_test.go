package meter

import (
	"testing"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
)

// The key the gateway puts on a task's requests is in the audit trail as
// a key handed out was: api_key_issued once per task (however many
// requests), naming the person and whether the key was hers or the
// daemon's. A key stored for an earlier account of her name (uid 900) is
// not put on: the daemon's is, and the mismatch is audited naming both
// uids.
func TestKeyUseAudited(t *testing.T) {
	w := newWorld(t)
	trail := w.audited(t)
	keys := w.m.Keys.(*credstore.Store)
	if err := keys.Set(credstore.User("alice", 900), "ANTHROPIC_API_KEY", "sk-old-alice"); err != nil {
		t.Fatal(err)
	}
	tok := w.m.Token("t-s-alice", "s-alice", alice)
	for range 3 {
		if g, err := w.m.Authorize(from(alice), gateway.Anthropic, tok); err != nil || g.Key != "sk-daemon" {
			t.Fatalf("grant %+v %v, want the daemon's key", g, err)
		}
	}
	if err := trail.Flush(); err != nil {
		t.Fatal(err)
	}
	issued := trail.Query(audit.Filter{Action: audit.APIKeyIssued})
	if len(issued) != 1 {
		t.Fatalf("api_key_issued records %+v, want 1", issued)
	}
	if r := issued[0]; r.User != "alice" || r.UID != audit.UIDOf(alice) || r.Task != "t-s-alice" ||
		r.Credential != "ANTHROPIC_API_KEY" || r.Reason != "daemon_credential" {
		t.Errorf("api_key_issued %+v", r)
	}
	mm := trail.Query(audit.Filter{Action: audit.AccountMismatch})
	if len(mm) != 1 || mm[0].User != "alice" || mm[0].StoredUID != audit.UIDOf(900) || mm[0].Credential != "ANTHROPIC_API_KEY" {
		t.Errorf("account_mismatch records %+v, want one for uid 900's key", mm)
	}
	if err := keys.Set(credstore.User("bob", bob), "ANTHROPIC_API_KEY", "sk-bob"); err != nil {
		t.Fatal(err)
	}
	if g, err := w.m.Authorize(from(bob), gateway.Anthropic, w.m.Token("t-s-bob", "s-bob", bob)); err != nil || g.Key != "sk-bob" {
		t.Fatalf("bob's grant %+v %v", g, err)
	}
	bobs := trail.Query(audit.Filter{Action: audit.APIKeyIssued, User: "bob"})
	if len(bobs) != 1 || bobs[0].Reason != "user_credential" {
		t.Errorf("bob's api_key_issued %+v, want one user_credential", bobs)
	}
}
