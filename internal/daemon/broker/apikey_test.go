package broker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func TestGetAPIKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       envOpts
		conn       string                            // executor the call arrives on
		token      func(t *testing.T, e *env) string // the token presented
		credential string
		wantKey    string
		wantCode   int
		wantReason string
	}{
		{name: "own key", conn: "alice", credential: "ANTHROPIC_API_KEY", wantKey: aliceKey,
			token: func(t *testing.T, e *env) string { return e.start(t, "alice", "t1", ModeDefault) }},
		{name: "daemon-wide fallback", conn: "alice", credential: "OPENAI_API_KEY", wantKey: daemonKey,
			token: func(t *testing.T, e *env) string { return e.start(t, "alice", "t1", ModeDefault) }},
		{name: "missing credential", conn: "bob", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeNotFound, wantReason: "credential_not_found",
			token: func(t *testing.T, e *env) string { return e.start(t, "bob", "t2", ModeDefault) }},
		{name: "token of another user", conn: "alice", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_mismatch",
			token: func(t *testing.T, e *env) string { return e.start(t, "bob", "t2", ModeDefault) }},
		{name: "unknown token", conn: "alice", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_unknown",
			token: func(*testing.T, *env) string { return strings.Repeat("A", 43) }},
		{name: "tampered token", conn: "alice", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_unknown",
			token: func(t *testing.T, e *env) string {
				tok := []byte(e.start(t, "alice", "t1", ModeDefault))
				tok[0] ^= 1
				return string(tok)
			}},
		{name: "expired", conn: "alice", credential: "ANTHROPIC_API_KEY", opts: envOpts{ttl: time.Millisecond},
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_expired",
			token: func(t *testing.T, e *env) string {
				tok := e.start(t, "alice", "t1", ModeDefault)
				time.Sleep(5 * time.Millisecond)
				return tok
			}},
		{name: "used up", conn: "alice", credential: "ANTHROPIC_API_KEY", opts: envOpts{maxUses: 2},
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_used_up",
			token: func(t *testing.T, e *env) string {
				tok := e.start(t, "alice", "t1", ModeDefault)
				for range 2 {
					if _, err := e.tokens.Check(tok, token.Binding{}); err != nil {
						t.Fatal(err)
					}
				}
				return tok
			}},
		{name: "revoked by EndTask", conn: "alice", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_unknown",
			token: func(t *testing.T, e *env) string {
				tok := e.start(t, "alice", "t1", ModeDefault)
				e.b.EndTask("t1")
				return tok
			}},
		{name: "bad credential name", conn: "alice", credential: "anthropic key",
			wantCode: rpc.CodeInvalidParams, wantReason: "invalid_params",
			token: func(t *testing.T, e *env) string { return e.start(t, "alice", "t1", ModeDefault) }},
		{name: "no user on connection", conn: "", credential: "ANTHROPIC_API_KEY",
			wantCode: protocol.CodeTokenInvalid, wantReason: "token_mismatch",
			token: func(t *testing.T, e *env) string { return e.start(t, "alice", "t1", ModeDefault) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.opts)
			tok := tt.token(t, e)
			key, err := getKey(context.Background(), e.executor(t, tt.conn), tok, tt.credential)
			wantRPC(t, err, tt.wantCode, tt.wantReason)
			if key != tt.wantKey {
				t.Errorf("api_key = %q, want %q", key, tt.wantKey)
			}
			if err != nil && strings.Contains(err.Error(), "sk-") {
				t.Errorf("error leaks a key: %v", err)
			}
		})
	}
}

// TestAuditNeverHoldsKeys runs issued and refused requests and checks the
// trail records them by name and never by value.
func TestAuditNeverHoldsKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := e.executor(t, "alice")
	tok := e.start(t, "alice", "t1", ModeDefault)
	ctx := context.Background()
	for _, name := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"} {
		_, _ = getKey(ctx, alice, tok, name)
	}
	_, _ = getKey(ctx, alice, "forged", "ANTHROPIC_API_KEY")
	must(t, e.audit.Close())

	data, err := os.ReadFile(e.auditPath)
	must(t, err)
	for _, secret := range []string{aliceKey, daemonKey, tok} {
		if strings.Contains(string(data), secret) {
			t.Errorf("audit file contains a secret %q:\n%s", secret, data)
		}
	}
	want := []struct {
		action audit.Action
		cred   string
		reason string
	}{
		{audit.APIKeyIssued, "ANTHROPIC_API_KEY", "user_credential"},
		{audit.APIKeyIssued, "OPENAI_API_KEY", "daemon_credential"},
		{audit.APIKeyRefused, "GEMINI_API_KEY", "credential_not_found"},
		{audit.APIKeyRefused, "ANTHROPIC_API_KEY", "token_unknown"},
	}
	got := e.audit.Query(audit.Filter{User: "alice"})
	for _, w := range want {
		found := false
		for _, r := range got {
			found = found || (r.Action == w.action && r.Credential == w.cred && r.Reason == w.reason)
		}
		if !found {
			t.Errorf("no %s record for %s (%s) in %+v", w.action, w.cred, w.reason, got)
		}
	}
}
