package broker

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/token"
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

// An agent the gateway does not serve (gateway.direct_agents) is handed
// the withheld keys just in time; every other agent's task still is not.
func TestWithheldKeysForDirectAgents(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.b.withheld, e.b.direct = []string{"OPENAI_API_KEY"}, []string{"opencode"}
	c := e.executor(t, "alice")
	for tool, want := range map[string]bool{"opencode": true, "codex": false, "": false} {
		tok, err := e.b.StartTask(token.Binding{User: "alice", Session: "s-" + tool, Task: "t-" + tool, UID: uids["alice"], Tool: tool}, ModeDefault, "")
		must(t, err)
		key, err := getKey(context.Background(), c, tok, "OPENAI_API_KEY")
		if (key != "") != want {
			t.Errorf("%q: key %q, err %v; want handed out %v", tool, key, err, want)
		}
	}
}
