package agent

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// fakeResumeRun runs a turn of a continuing agent session "gone-1"
// against a fake agent (fakeAgent), bounded so that a turn that never
// ends fails the test.
func fakeResumeRun(t *testing.T, a Adapter, bin string) (Result, *codexHost) {
	t.Helper()
	home := t.TempDir()
	req := Request{TaskID: codexTaskID(t), Prompt: "hi", Cwd: home, PermissionMode: "default", Binary: bin, Resume: "gone-1",
		Env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), a.CredentialKey() + "=" + fakeKey}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	h := &codexHost{}
	res, err := a.Run(ctx, req, h)
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end: %+v %v", res, err)
	}
	t.Logf("result %+v, err %v", res, err)
	return res, h
}

// notPrompted fails a fake agent that is sent a turn after its answer to
// the resume: no conversation may start afresh.
const notPrompted = `case "$line" in *session/prompt*|*'"type":"user"'*|*turn/start*) echo "a turn was sent: $line" >&2; exit 9;; esac`

// TestResumeRefusedFake: when an agent answers that it has no such
// session to continue (each CLI in its own words, as 0.61 gemini-cli,
// opencode 1.18, Claude Code 2.1 and codex 0.169 do), the turn fails
// saying it could not continue that session, in the agent's words
// without its stderr, and no turn is sent; a resumed turn that fails
// later, at the model, says that instead.
func TestResumeRefusedFake(t *testing.T) {
	t.Parallel()
	acp := &ACP{Key: "FAKE_KEY", Setup: func(*Request) ([]string, error) { return nil, nil }}
	initACP := func(caps string) string {
		return `echo "noise on stderr" >&2; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":` + caps + `}}'`
	}
	for _, c := range []struct {
		name  string
		a     Adapter
		steps []string
		code  string
		want  string
	}{
		{"gemini load", acp, []string{initACP(`{"loadSession":true}`),
			`case "$line" in *'"method":"session/load"'*'"sessionId":"gone-1"'*) ;; *) exit 9;; esac
echo '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}}'`, notPrompted},
			protocol.TaskAgentCrashed, "could not continue agent session gone-1: No previous sessions found for this project."},
		{"opencode resume", acp, []string{initACP(`{"sessionCapabilities":{"resume":{}}}`),
			`case "$line" in *'"method":"session/resume"'*) ;; *) exit 9;; esac
echo '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error: OpenCode service failure","data":{"service":"session"}}}'`, notPrompted},
			protocol.TaskAgentCrashed, `could not continue agent session gone-1: Internal error: OpenCode service failure {"service":"session"}`},
		{"no capability", acp, []string{initACP(`{}`), notPrompted},
			protocol.TaskAgentCrashed, "could not continue agent session gone-1: this agent cannot resume a session"},
		{"claude", Claude{}, []string{`:`,
			`echo '{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"session_id":"gone-1","usage":{},"errors":["No conversation found with session ID: gone-1"]}'; exit 1`},
			protocol.TaskAgentCrashed, "could not continue agent session gone-1: No conversation found with session ID: gone-1"},
		{"claude model", Claude{}, []string{`:`,
			`echo '{"type":"system","subtype":"init","session_id":"gone-1"}'
echo '{"type":"result","subtype":"success","is_error":true,"session_id":"gone-1","usage":{},"result":"API Error: 500 overloaded","api_error_status":500}'`},
			protocol.TaskModelAPI, "API Error: 500 overloaded"},
		{"codex", Codex{}, []string{`echo '{"id":1,"result":{}}'`, `:`,
			`case "$line" in *'"method":"thread/resume"'*'"threadId":"gone-1"'*) ;; *) exit 9;; esac
echo '{"id":2,"error":{"code":-32600,"message":"no rollout found for thread id gone-1"}}'`, notPrompted},
			protocol.TaskAgentCrashed, "could not continue agent session gone-1: no rollout found for thread id gone-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, h := fakeResumeRun(t, c.a, fakeAgent(t, c.steps...))
			if res.Status != "failed" || res.Err == nil || res.Err.Code != c.code || !strings.HasPrefix(res.Err.Message, c.want) {
				t.Fatalf("result %+v (%+v): want failed, %s, %q", res, res.Err, c.code, c.want)
			}
			if strings.Contains(res.Err.Message, "noise") || strings.Contains(res.Err.Message, "a turn was sent") {
				t.Errorf("message %q: want the agent's answer alone, and no turn sent", res.Err.Message)
			}
			for _, ev := range h.all() { // Claude Code's result line is its usage and error
				if ev.Type != protocol.EventUsage && ev.Type != protocol.EventError {
					t.Errorf("event %s %v reported; want none of the conversation", ev.Type, ev.Data)
				}
			}
		})
	}
}
