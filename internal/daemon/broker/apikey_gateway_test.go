package broker

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// Under the model gateway its keys are never handed to an executor, even
// for a live task's token; other credentials still are. The refusal is
// audited without the key.
func TestWithheldKeysRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.b.withheld = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}
	tok := e.start(t, "alice", "t1", ModeDefault)
	c := e.executor(t, "alice")
	key, err := getKey(context.Background(), c, tok, "ANTHROPIC_API_KEY")
	wantRPC(t, err, protocol.CodePermissionDenied, protocol.ReasonWithheld)
	if key != "" {
		t.Fatalf("got a key: %q", key)
	}
	_, err = getKey(context.Background(), c, tok, "OPENAI_API_KEY")
	wantRPC(t, err, protocol.CodePermissionDenied, protocol.ReasonWithheld)
	must(t, e.audit.Close())
	b, _ := os.ReadFile(e.auditPath)
	if !strings.Contains(string(b), `"reason":"withheld"`) || strings.Contains(string(b), aliceKey) || strings.Contains(string(b), daemonKey) {
		t.Fatalf("audit trail: %s", b)
	}
}
