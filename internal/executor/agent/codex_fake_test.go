package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// fakeCodexRun runs a codex turn against a fake app-server (fakeAgent),
// bounded so that a turn that never ends fails the test.
func fakeCodexRun(t *testing.T, bin string) (Result, *codexHost, error) {
	t.Helper()
	home := t.TempDir()
	req := Request{TaskID: codexTaskID(t), Prompt: "hi", Cwd: home, PermissionMode: "default", Binary: bin,
		Env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=" + fakeKey}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	h := &codexHost{}
	res, err := Codex{}.Run(ctx, req, h)
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end: %+v %v", res, err)
	}
	t.Logf("result %+v, err %v", res, err)
	return res, h, err
}

// codexFakeStart answers initialize, reads initialized and starts a thread,
// all without "jsonrpc" as codex app-server writes.
var codexFakeStart = []string{
	`echo '{"id":1,"result":{}}'`,
	`:`,
	`echo '{"id":2,"result":{"thread":{"id":"th-1"}}}'`,
}

// TestCodexCrash: codex dying mid-turn is agent_crashed with its stderr,
// the key redacted everywhere; what it reported first is kept.
func TestCodexCrash(t *testing.T) {
	t.Parallel()
	bin := fakeAgent(t, append(codexFakeStart,
		`echo '{"method":"item/started","params":{"threadId":"th-1","item":{"id":"m1","type":"agentMessage"}}}'
echo '{"method":"item/agentMessage/delta","params":{"threadId":"th-1","itemId":"m1","delta":"key `+fakeKey+`"}}'
echo "panicked: key `+fakeKey+`" >&2; exit 101`)...)
	res, h, err := fakeCodexRun(t, bin)
	if err != nil || res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentCrashed ||
		!strings.Contains(res.Err.Message, "exit status 101") || res.AgentSession != "th-1" {
		t.Fatalf("crashed codex: res %+v, err %v; want %s", res, err, protocol.TaskAgentCrashed)
	}
	if got := h.text(); got != "key [REDACTED]" {
		t.Errorf("text %q, want the key redacted", got)
	}
	for _, ev := range h.all() {
		if strings.Contains(string(ev.Raw), fakeKey) {
			t.Errorf("key in raw event %s", ev.Raw)
		}
	}
}

// TestCodexCallError: codex refusing a call fails the turn saying which
// and why; a request agor does not serve is refused, and the turn goes on
// to codex's answer.
func TestCodexCallError(t *testing.T) {
	t.Parallel()
	bin := fakeAgent(t, append(codexFakeStart,
		`echo '{"id":"srv-1","method":"item/tool/call","params":{}}'; read -r line
case "$line" in *jsonrpc*) echo "not bare: $line" >&2; exit 9;; esac
case "$line" in *'"id":"srv-1"'*'agor does not support item/tool/call'*) ;; *) echo "bad reply: $line" >&2; exit 9;; esac
echo '{"id":3,"error":{"code":-32600,"message":"thread th-1 is busy"}}'`)...)
	res, _, err := fakeCodexRun(t, bin)
	if err != nil || res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentCrashed ||
		!strings.Contains(res.Err.Message, "turn/start: thread th-1 is busy") {
		t.Fatalf("refused turn/start: res %+v, err %v", res, err)
	}
}
