package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// fakeAgent writes a shell script standing in for an agent CLI: it reads
// one line of stdin before each step of script (our requests, in order)
// and runs the step, which writes the agent's lines.
func fakeAgent(t *testing.T, steps ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, s := range steps {
		b.WriteString("read -r line || exit 0\n" + s + "\n")
	}
	b.WriteString("while read -r line; do :; done\n") // until stdin closes
	path := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

const fakeKey = "fake-secret-0123456789"

// fakeACPRun runs an ACP turn against a fake agent, bounded so that a
// turn that never ends fails the test instead of hanging it.
func fakeACPRun(t *testing.T, bin string) (Result, *acpHost, error) {
	t.Helper()
	a := &ACP{Key: "FAKE_KEY", Setup: func(*Request) ([]string, error) { return nil, nil }}
	dir := t.TempDir()
	req := Request{TaskID: "t1", Prompt: "hi", Cwd: dir, PermissionMode: "default", Binary: bin,
		Env: []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "FAKE_KEY=" + fakeKey}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	h := &acpHost{}
	res, err := a.Run(ctx, req, h)
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end: %+v %v", res, err)
	}
	return res, h, err
}

// acpFakeStart answers initialize (after a stray line, and without
// "jsonrpc") and session/new.
var acpFakeStart = []string{
	`echo "Loading extensions..."; echo '{"id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}'`,
	`echo '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}'`,
}

// TestACPAgentCrash: an agent that dies mid-prompt fails the turn as
// agent_crashed with its stderr; what it said first is reported, without
// the key.
func TestACPAgentCrash(t *testing.T) {
	t.Parallel()
	bin := fakeAgent(t, append(acpFakeStart,
		`echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"key `+fakeKey+`"}}}}'
echo "boom: out of memory" >&2; exit 3`)...)
	res, h, err := fakeACPRun(t, bin)
	if err == nil || res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentCrashed ||
		!strings.Contains(res.Err.Message, "boom: out of memory") || !strings.Contains(res.Err.Message, "exit status 3") {
		t.Fatalf("crashed agent: res %+v, err %v; want %s with its stderr", res, err, protocol.TaskAgentCrashed)
	}
	deltas := h.ofType(protocol.EventTextDelta)
	if len(deltas) != 1 || deltas[0].Data["text"] != "key [REDACTED]" || strings.Contains(string(deltas[0].Raw), fakeKey) {
		t.Errorf("text deltas %+v, want one with the key redacted", deltas)
	}
}

// TestACPPromptError: an error answer to the prompt is the model API
// failing, whatever its data (here a string, echoed id and all).
func TestACPPromptError(t *testing.T) {
	t.Parallel()
	bin := fakeAgent(t, append(acpFakeStart,
		`echo '{"jsonrpc":"2.0","id":"3","error":{"code":-32603,"message":"Internal error","data":"quota exceeded"}}'`)...)
	res, _, err := fakeACPRun(t, bin)
	if err == nil || res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskModelAPI ||
		!strings.Contains(res.Err.Message, "quota exceeded") {
		t.Fatalf("prompt error: res %+v, err %v; want %s saying why", res, err, protocol.TaskModelAPI)
	}
}
