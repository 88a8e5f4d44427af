package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// claudeLiveRig is one warm Claude Code process against a stand-in, whose
// turns' permission questions are approved and counted.
type claudeLiveRig struct {
	t    *testing.T
	ctx  context.Context
	rig  *claudeRig
	srv  *modeltest.Anthropic
	live agent.Live
	pid  int
}

func openClaudeLive(t *testing.T, mode string, script ...modeltest.AnthTurn) *claudeLiveRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	r := &claudeLiveRig{t: t, ctx: ctx, rig: newClaudeRig(t), srv: modeltest.NewAnthropic(t, script...)}
	res, live, err := agent.Claude{}.Open(ctx, r.rig.request(r.srv, "get ready", mode), &claudeHost{})
	if err != nil || live == nil {
		t.Fatalf("Open: %+v %v", res, err)
	}
	t.Cleanup(live.Close)
	claudeCompleted(t, res)
	r.live, r.pid = live, live.Pid()
	return r
}

// turn runs a warm turn in mode on the same process and returns its
// permission questions.
func (r *claudeLiveRig) turn(prompt, mode string) int {
	r.t.Helper()
	return r.turnWith(prompt, mode, "")
}

// turnWith is turn with the model named ("" the one it runs).
func (r *claudeLiveRig) turnWith(prompt, mode, model string) int {
	r.t.Helper()
	asked := 0
	h := &claudeHost{ask: func(context.Context, string, json.RawMessage) agent.Decision {
		asked++
		return agent.Decision{Approved: true}
	}}
	begin := time.Now()
	req := r.rig.request(r.srv, prompt, mode)
	req.Model = model
	res, err := r.live.Turn(r.ctx, req, h)
	if err != nil {
		r.t.Fatalf("%s turn: %v", mode, err)
	}
	claudeCompleted(r.t, res)
	if r.live.Pid() != r.pid || !r.live.Usable() {
		r.t.Fatalf("%s turn: process %d (usable %v), want %d kept", mode, r.live.Pid(), r.live.Usable(), r.pid)
	}
	r.t.Logf("%s turn: %v, %d questions", mode, time.Since(begin), asked)
	return asked
}

// switches checks CanSwitchMode for each mode.
func (r *claudeLiveRig) switches(want map[string]bool) {
	r.t.Helper()
	for mode, w := range want {
		if got := r.live.CanSwitchMode(mode); got != w {
			r.t.Errorf("CanSwitchMode(%q) = %v, want %v", mode, got, w)
		}
	}
}

// makes runs a turn in mode whose command makes file, and checks that it
// was made after that many permission questions.
func (r *claudeLiveRig) makes(file, mode string, questions int) {
	r.t.Helper()
	if n := r.turn("make "+file, mode); n != questions || !r.made(file) {
		r.t.Fatalf("%s: %d questions, made %v; want %d, made", mode, n, r.made(file), questions)
	}
}

// made says whether the agent's command made file in its cwd.
func (r *claudeLiveRig) made(file string) bool {
	_, err := os.Stat(filepath.Join(r.rig.cwd, file))
	return err == nil
}

// A warm Claude Code process started in default mode switches its mode
// between turns (set_permission_mode): acceptEdits runs the command
// unasked, default asks again, and in plan the model is told plan mode is
// active; all on the one process. It cannot switch into
// bypassPermissions (Claude Code refuses, for a session not started in
// it): CanSwitchMode says so, and a turn asked anyway is ErrGone, with
// nothing reported and the process closed.
func TestClaudeLiveModeSwitch(t *testing.T) {
	t.Parallel()
	r := openClaudeLive(t, "default", modeltest.AnthTurn{Text: "ready"},
		modeltest.AnthTurn{Bash: "touch edit-1", Text: "done"},
		modeltest.AnthTurn{Bash: "touch default-1", Text: "done"},
		modeltest.AnthTurn{Text: "planned"})
	r.switches(map[string]bool{"": true, "default": true, "acceptEdits": true, "plan": true, "bypassPermissions": false, "yolo": false})
	r.makes("edit-1", "acceptEdits", 0)
	r.makes("default-1", "default", 1)
	r.turn("plan something", "plan")
	conv := r.srv.Conversation()
	for i, c := range conv {
		if got := strings.Contains(string(c.Body), "Plan mode is active"); got != (i == len(conv)-1) {
			t.Errorf("model request %d of %d: plan mode reminder %v", i+1, len(conv), got)
		}
	}

	h := &claudeHost{}
	res, err := r.live.Turn(r.ctx, r.rig.request(r.srv, "anything", "bypassPermissions"), h)
	if !errors.Is(err, agent.ErrGone) || res.Status != "" || !strings.Contains(err.Error(), "bypassPermissions") {
		t.Fatalf("turn in bypassPermissions: %+v %v, want ErrGone", res, err)
	}
	if len(h.events) != 0 || r.live.Usable() || len(r.srv.Conversation()) != len(conv) {
		t.Fatalf("refused switch: %d events, usable %v, %d model requests (had %d)", len(h.events), r.live.Usable(), len(r.srv.Conversation()), len(conv))
	}
	t.Logf("refused: %v", err)
}

// A warm Claude Code process started in bypassPermissions switches to
// default (it asks again) and back (it does not). It is not switched to
// plan: such a session keeps bypass semantics there, running what a
// process started in plan would ask about, as the last turn shows.
func TestClaudeLiveModeFromBypass(t *testing.T) {
	t.Parallel()
	r := openClaudeLive(t, "bypassPermissions", modeltest.AnthTurn{Text: "ready"},
		modeltest.AnthTurn{Bash: "touch default-1", Text: "done"},
		modeltest.AnthTurn{Bash: "touch bypass-1", Text: "done"},
		modeltest.AnthTurn{Bash: "touch plan-1", Text: "done"})
	r.switches(map[string]bool{"default": true, "acceptEdits": true, "bypassPermissions": true, "plan": false})
	r.makes("default-1", "default", 1)
	r.makes("bypass-1", "bypassPermissions", 0)
	// Not what the pool does: it restarts the process for plan instead.
	if n := r.turn("make plan-1", "plan"); n != 0 || !r.made("plan-1") {
		t.Fatalf("plan after bypassPermissions: %d questions, made %v; Claude Code no longer keeps bypass semantics there, and CanSwitchMode may allow plan", n, r.made("plan-1"))
	}
}

// A warm Claude Code process changes its model between turns
// (set_model): the turn's model requests name the new model, on the same
// process, and so do the next turn's. Back to the CLI's default is a
// restart (CanSwitchModel), as it has no name to switch to.
func TestClaudeLiveModelSwitch(t *testing.T) {
	t.Parallel()
	const other = "claude-haiku-4-5-20251001"
	r := openClaudeLive(t, "default", modeltest.AnthTurn{Text: "ready"},
		modeltest.AnthTurn{Text: "switched"}, modeltest.AnthTurn{Text: "still"})
	if r.live.CanSwitchModel("") || !r.live.CanSwitchModel(other) {
		t.Error("CanSwitchModel: want a named model live, the default by restart")
	}
	modelOf := func() string {
		conv := r.srv.Conversation()
		var body struct{ Model string }
		_ = json.Unmarshal(conv[len(conv)-1].Body, &body)
		return body.Model
	}
	started := modelOf()
	r.turnWith("switch models", "default", other)
	if got := modelOf(); got != other || started == other {
		t.Fatalf("model requests named %q, then %q after set_model %s", started, got, other)
	}
	r.turnWith("once more", "default", other)
	if got := modelOf(); got != other {
		t.Fatalf("the turn after: model %q, want %q", got, other)
	}
	t.Logf("started with %q, switched live to %q", started, other)
}
