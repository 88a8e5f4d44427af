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
const claudeModeRequest = `case "$line" in *'"request":{"mode":"plan","subtype":"set_permission_mode"},"request_id":"mode-1","type":"control_request"'*) ;; *) echo "bad request: $line" >&2; exit 9;; esac
echo '{"type":"system","subtype":"status"}'`

// TestClaudeModeSwitchFake: a warm turn in another mode first has Claude
// Code switch (set_permission_mode, answered before the turn is sent);
// a refusal, no answer within claudeModeWait, or the process's end
// instead is ErrGone: nothing reported, the process closed, so that the
// turn runs cold on a resumed session. Not parallel: it shortens
// claudeModeWait.
func TestClaudeModeSwitchFake(t *testing.T) {
	defer func(d time.Duration) { claudeModeWait = d }(claudeModeWait)
	claudeModeWait = 300 * time.Millisecond
	t.Run("switched", func(t *testing.T) {
		turn := `case "$line" in *'"type":"user"'*) ;; *) echo "not a turn: $line" >&2; exit 9;; esac
echo '{"type":"result","subtype":"success","session_id":"fake-1","usage":{}}'`
		l, req := claudeFakeOpen(t, claudeModeRequest+`
echo '{"type":"control_response","response":{"subtype":"success","request_id":"mode-1"}}'`, turn, turn)
		req.PermissionMode = "plan"
		for i := range 2 { // the second turn, in the same mode, is sent at once
			res, err := l.Turn(t.Context(), req, &codexHost{})
			if err != nil || res.Status != "completed" || l.mode != "plan" || !l.Usable() {
				t.Fatalf("turn %d in plan: %+v %v; mode %q", i+1, res, err, l.mode)
			}
		}
	})
	for _, c := range []struct{ name, answer, want string }{
		{"refused", `echo '{"type":"control_response","response":{"subtype":"error","request_id":"mode-1","error":"not now, key ` + fakeKey + `"}}'`, "refused: not now, key [REDACTED]"},
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
