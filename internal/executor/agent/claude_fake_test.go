package agent

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// claudeFakeOpen opens a warm Claude Code stand-in (fakeAgent: its first
// two steps read initialize and the first turn) in default mode.
func claudeFakeOpen(t *testing.T, steps ...string) (*claudeLive, Request) {
	t.Helper()
	first := `echo '{"type":"system","subtype":"init","session_id":"fake-1"}'; echo '{"type":"result","subtype":"success","session_id":"fake-1","usage":{}}'`
	bin := fakeAgent(t, append([]string{`:`, first}, steps...)...)
	dir := t.TempDir()
	req := Request{TaskID: "t1", Prompt: "hi", Cwd: dir, PermissionMode: "default", Binary: bin,
		Env: []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=" + fakeKey}}
	res, live, err := Claude{}.Open(t.Context(), req, &codexHost{})
	if err != nil || res.Status != "completed" || live == nil {
		t.Fatalf("Open: %+v %v (live %v)", res, err, live)
	}
	t.Cleanup(live.Close)
	return live.(*claudeLive), req
}

// claudeModeRequest is the line a switch to plan must be.
const claudeModeRequest = `case "$line" in *'"request":{"mode":"plan","subtype":"set_permission_mode"},"request_id":"control-1","type":"control_request"'*) ;; *) echo "bad request: $line" >&2; exit 9;; esac
echo '{"type":"system","subtype":"status"}'`

// TestClaudeModeSwitchFake: a warm turn in another mode first has Claude
// Code switch (set_permission_mode, answered before the turn is sent);
// a refusal, no answer within claudeControlWait, or the process's end
// instead is ErrGone: nothing reported, the process closed, so that the
// turn runs cold on a resumed session. Not parallel: it shortens
// claudeControlWait.
func TestClaudeModeSwitchFake(t *testing.T) {
	defer func(d time.Duration) { claudeControlWait = d }(claudeControlWait)
	claudeControlWait = 300 * time.Millisecond
	t.Run("switched", func(t *testing.T) {
		turn := `case "$line" in *'"type":"user"'*) ;; *) echo "not a turn: $line" >&2; exit 9;; esac
echo '{"type":"result","subtype":"success","session_id":"fake-1","usage":{}}'`
		l, req := claudeFakeOpen(t, claudeModeRequest+`
echo '{"type":"control_response","response":{"subtype":"success","request_id":"control-1"}}'`, turn, turn)
		req.PermissionMode = "plan"
		for i := range 2 { // the second turn, in the same mode, is sent at once
			res, err := l.Turn(t.Context(), req, &codexHost{})
			if err != nil || res.Status != "completed" || l.mode != "plan" || !l.Usable() {
				t.Fatalf("turn %d in plan: %+v %v; mode %q", i+1, res, err, l.mode)
			}
		}
	})
	for _, c := range []struct{ name, answer, want string }{
		{"refused", `echo '{"type":"control_response","response":{"subtype":"error","request_id":"control-1","error":"not now, key ` + fakeKey + `"}}'`, "refused: not now, key [REDACTED]"},
		{"no answer", `:`, "no answer"},
		{"exited", `exit 0`, "EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, req := claudeFakeOpen(t, claudeModeRequest+"\n"+c.answer)
			req.PermissionMode = "plan"
			h := &codexHost{}
			begin := time.Now()
			res, err := l.Turn(t.Context(), req, h)
			if !errors.Is(err, ErrGone) || res.Status != "" || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), fakeKey) {
				t.Fatalf("Turn: %+v %v; want ErrGone saying %q", res, err, c.want)
			}
			if n := len(h.all()); n != 0 || l.Usable() || l.p.Alive() {
				t.Fatalf("%d events, usable %v, alive %v; want none, closed", n, l.Usable(), l.p.Alive())
			}
			t.Logf("%v in %v", err, time.Since(begin))
		})
	}
}

// TestClaudeModelSwitchFake: a warm turn with another model (and another
// mode) has Claude Code switch both first, mode then model, each answered
// before the turn is sent; back to the CLI's default model is no switch
// Claude Code can make (CanSwitchModel says restart).
func TestClaudeModelSwitchFake(t *testing.T) {
	model := `case "$line" in *'"request":{"model":"claude-other","subtype":"set_model"},"request_id":"control-2","type":"control_request"'*) ;; *) echo "bad request: $line" >&2; exit 9;; esac
echo '{"type":"control_response","response":{"subtype":"success","request_id":"control-2"}}'`
	turn := `case "$line" in *'"type":"user"'*) ;; *) echo "not a turn: $line" >&2; exit 9;; esac
echo '{"type":"result","subtype":"success","session_id":"fake-1","usage":{}}'`
	l, req := claudeFakeOpen(t, claudeModeRequest+`
echo '{"type":"control_response","response":{"subtype":"success","request_id":"control-1"}}'`, model, turn, turn)
	if l.CanSwitchModel("") || !l.CanSwitchModel("claude-other") {
		t.Fatal("CanSwitchModel: want a named model live, the default by restart")
	}
	req.PermissionMode, req.Model = "plan", "claude-other"
	for i := range 2 { // the second turn, with the same settings, is sent at once
		res, err := l.Turn(t.Context(), req, &codexHost{})
		if err != nil || res.Status != "completed" || l.mode != "plan" || l.model != "claude-other" || !l.Usable() {
			t.Fatalf("turn %d: %+v %v; mode %q, model %q", i+1, res, err, l.mode, l.model)
		}
	}
}
