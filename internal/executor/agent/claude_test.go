package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

const claudeTestKey = "sk-ant-test-0123456789abcdef"

// claudeHost is a fake Host: it records events and answers Ask with ask.
type claudeHost struct {
	mu     sync.Mutex
	events []agent.Event
	onEmit func(agent.Event)
	ask    func(ctx context.Context, tool string, input json.RawMessage) agent.Decision
}

func (h *claudeHost) Emit(ev agent.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	f := h.onEmit
	h.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

func (h *claudeHost) Ask(ctx context.Context, tool string, input json.RawMessage) agent.Decision {
	if h.ask == nil {
		return agent.Decision{Approved: false, Reason: "no asking in this test"}
	}
	return h.ask(ctx, tool, input)
}

func (h *claudeHost) of(typ string) []agent.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []agent.Event
	for _, ev := range h.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (h *claudeHost) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, ev := range h.events {
		if len(ev.Raw) == 0 || !json.Valid(ev.Raw) {
			t.Errorf("event %d (%s): Raw is not the agent's JSON line: %q", i, ev.Type, ev.Raw)
		}
		if strings.Contains(string(ev.Raw), claudeTestKey) {
			t.Errorf("event %d (%s) carries the API key", i, ev.Type)
		}
	}
}

// claudeRig is one agent run's sandbox: its own HOME and cwd, owned by
// the uid the agent runs as (nobody when the tests run as root, since
// Claude Code refuses bypassPermissions as root).
type claudeRig struct {
	home, cwd string
	uid       int
	binary    string
}

func newClaudeRig(t *testing.T) *claudeRig {
	t.Helper()
	bin := agenttest.Binary(t, "claude-code")
	dir, err := os.MkdirTemp("", "agor-claude-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &claudeRig{home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "work"), uid: os.Geteuid(), binary: bin}
	for _, d := range []string{r.home, r.cwd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r.uid != 0 {
		return r
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("running as root needs setpriv (util-linux) to run the agent as nobody: %v", err)
	}
	r.uid = 65534
	for _, d := range []string{r.home, r.cwd} {
		if err := os.Chown(d, r.uid, r.uid); err != nil {
			t.Fatal(err)
		}
	}
	r.binary = filepath.Join(dir, "claude-as-nobody")
	script := "#!/bin/sh\nexec " + setpriv + " --reuid=65534 --regid=65534 --clear-groups " + bin + " \"$@\"\n"
	if err := os.WriteFile(r.binary, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *claudeRig) request(srv *modeltest.Anthropic, prompt, mode string) agent.Request {
	return agent.Request{
		SessionID:      "s1",
		TaskID:         "t1",
		Prompt:         prompt,
		Cwd:            r.cwd,
		PermissionMode: mode,
		Binary:         r.binary,
		Env: []string{
			"HOME=" + r.home,
			"USER=agent",
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"),
			"XDG_CACHE_HOME=" + filepath.Join(r.home, ".cache"),
			"XDG_DATA_HOME=" + filepath.Join(r.home, ".local/share"),
			"XDG_STATE_HOME=" + filepath.Join(r.home, ".local/state"),
			"ANTHROPIC_BASE_URL=" + srv.URL,
			"ANTHROPIC_API_KEY=" + claudeTestKey,
			"CLAUDE_CODE_MAX_RETRIES=0",
			"API_TIMEOUT_MS=20000",
		},
	}
}

func claudeRun(t *testing.T, req agent.Request, h *claudeHost) agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := agent.Claude{}.Run(ctx, req, h)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func claudeCompleted(t *testing.T, res agent.Result) {
	t.Helper()
	if res.Status != "completed" || res.Err != nil {
		t.Fatalf("result = %+v (err %v), want completed", res, res.Err)
	}
	if res.AgentSession == "" {
		t.Error("no AgentSession")
	}
}

func TestClaudeRegistered(t *testing.T) {
	a, err := agent.Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.CredentialKey(); got != "ANTHROPIC_API_KEY" {
		t.Errorf("CredentialKey = %q", got)
	}
}

func TestClaudePlainTurn(t *testing.T) {
	t.Parallel()
	usage := modeltest.AnthUsage{InputTokens: 321, OutputTokens: 45, CacheReadTokens: 67, CacheWriteTokens: 8}
	srv := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "Hello from the stand-in.", Usage: usage})
	rig := newClaudeRig(t)
	h := &claudeHost{}
	res := claudeRun(t, rig.request(srv, "say hello", "default"), h)
	claudeCompleted(t, res)
	want := agent.Usage{InputTokens: 321, OutputTokens: 45, CacheReadTokens: 67, CacheWriteTokens: 8}
	if res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	if res.MessageCount != 1 {
		t.Errorf("MessageCount = %d, want 1", res.MessageCount)
	}
	var text string
	for _, ev := range h.of(protocol.EventTextDelta) {
		text += ev.Data["text"].(string)
	}
	if text != "Hello from the stand-in." {
		t.Errorf("text deltas = %q", text)
	}
	if u := h.of(protocol.EventUsage); len(u) != 1 || u[0].Data["output_tokens"] != int64(45) {
		t.Errorf("usage events = %+v", u)
	}
	conv := srv.Conversation()
	if len(conv) != 1 {
		t.Fatalf("stand-in saw %d conversation requests, want 1", len(conv))
	}
	for _, r := range srv.Requests() {
		if r.APIKey != claudeTestKey {
			t.Errorf("stand-in saw x-api-key %q", r.APIKey)
		}
	}
	if !strings.Contains(conv[0].Text(), "say hello") {
		t.Errorf("prompt did not reach the model: %s", conv[0].Text())
	}
	h.check(t)
}

// claudeToolTurn runs a turn in which the model asks to run command.
func claudeToolTurn(t *testing.T, mode, command string, ask func(context.Context, string, json.RawMessage) agent.Decision) (*claudeRig, *modeltest.Anthropic, *claudeHost, agent.Result) {
	t.Helper()
	srv := modeltest.NewAnthropic(t, modeltest.AnthTurn{Bash: command, Text: "All done."})
	rig := newClaudeRig(t)
	h := &claudeHost{ask: ask}
	res := claudeRun(t, rig.request(srv, "please run "+command, mode), h)
	return rig, srv, h, res
}

func claudeToolEvents(t *testing.T, h *claudeHost, command string) {
	t.Helper()
	calls := h.of(protocol.EventToolCall)
	if len(calls) != 1 || calls[0].Data["tool_name"] != "Bash" || calls[0].Data["tool_use_id"] != "toolu_standin01" {
		t.Fatalf("tool_call events = %+v", calls)
	}
	if in, _ := json.Marshal(calls[0].Data["tool_input"]); !strings.Contains(string(in), command) {
		t.Errorf("tool_input = %s, want the command %q", in, command)
	}
	results := h.of(protocol.EventToolResult)
	if len(results) != 1 || results[0].Data["tool_use_id"] != "toolu_standin01" {
		t.Fatalf("tool_result events = %+v", results)
	}
}

func TestClaudeToolTurnBypass(t *testing.T) {
	t.Parallel()
	_, srv, h, res := claudeToolTurn(t, "bypassPermissions", "echo agor-marker-$((6*7))", nil)
	claudeCompleted(t, res)
	claudeToolEvents(t, h, "echo agor-marker")
	if out := h.of(protocol.EventToolResult)[0].Data; out["output"] != "agor-marker-42" || out["is_error"] != false {
		t.Errorf("tool_result = %+v, want the command's output", out)
	}
	if n := len(h.of(protocol.EventPermissionAsked)); n != 0 {
		t.Errorf("%d permission questions in bypassPermissions", n)
	}
	if res.MessageCount != 3 {
		t.Errorf("MessageCount = %d, want 3 (text, tool_use, final text)", res.MessageCount)
	}
	conv := srv.Conversation()
	if len(conv) != 2 || !conv[1].AnthHasToolResult() || !strings.Contains(conv[1].Text(), "agor-marker-42") {
		t.Errorf("the tool's output did not reach the model: %d requests", len(conv))
	}
	d := modeltest.AnthDefaultUsage
	want := agent.Usage{InputTokens: 2 * d.InputTokens, OutputTokens: 2 * d.OutputTokens, CacheReadTokens: 2 * d.CacheReadTokens, CacheWriteTokens: 2 * d.CacheWriteTokens}
	if res.Usage != want {
		t.Errorf("usage = %+v, want the sum of both responses %+v", res.Usage, want)
	}
	h.check(t)
}

func TestClaudePermissionApproved(t *testing.T) {
	t.Parallel()
	var asked []string
	rig, _, h, res := claudeToolTurn(t, "default", "touch made-by-agent", func(_ context.Context, tool string, input json.RawMessage) agent.Decision {
		asked = append(asked, tool+" "+string(input))
		return agent.Decision{Approved: true}
	})
	claudeCompleted(t, res)
	claudeToolEvents(t, h, "touch made-by-agent")
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "Bash ") || !strings.Contains(asked[0], "touch made-by-agent") {
		t.Errorf("Ask calls = %q", asked)
	}
	fi, err := os.Stat(filepath.Join(rig.cwd, "made-by-agent"))
	if err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != rig.uid {
		t.Errorf("file owned by uid %d, want the agent's uid %d", uid, rig.uid)
	}
	pa, pd := h.of(protocol.EventPermissionAsked), h.of(protocol.EventPermissionDecided)
	if len(pa) != 1 || pa[0].Data["tool_name"] != "Bash" {
		t.Errorf("permission_asked = %+v", pa)
	}
	if len(pd) != 1 || pd[0].Data["approved"] != true {
		t.Errorf("permission_decided = %+v", pd)
	}
	if r := h.of(protocol.EventToolResult)[0].Data; r["is_error"] != false {
		t.Errorf("tool_result = %+v", r)
	}
	h.check(t)
}

func TestClaudePermissionDenied(t *testing.T) {
	t.Parallel()
	const reason = "not in this repository, thanks"
	rig, srv, h, res := claudeToolTurn(t, "default", "touch made-by-agent", func(context.Context, string, json.RawMessage) agent.Decision {
		return agent.Decision{Approved: false, Reason: reason}
	})
	claudeCompleted(t, res)
	if _, err := os.Stat(filepath.Join(rig.cwd, "made-by-agent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("denied command ran: stat = %v", err)
	}
	pd := h.of(protocol.EventPermissionDecided)
	if len(pd) != 1 || pd[0].Data["approved"] != false || pd[0].Data["reason"] != reason {
		t.Errorf("permission_decided = %+v", pd)
	}
	claudeToolEvents(t, h, "touch made-by-agent")
	if r := h.of(protocol.EventToolResult)[0].Data; r["is_error"] != true || !strings.Contains(r["output"].(string), reason) {
		t.Errorf("tool_result = %+v, want an error carrying the reason", r)
	}
	conv := srv.Conversation()
	if len(conv) != 2 || !conv[1].AnthHasToolResult() || !strings.Contains(conv[1].Text(), reason) {
		t.Errorf("the denial did not reach the model (%d requests)", len(conv))
	}
	h.check(t)
}

// claudeProcsIn lists processes whose cwd is dir (or beneath it).
func claudeProcsIn(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out = append(out, e.Name()+":"+strings.TrimSpace(string(comm)))
	}
	return out
}

func TestClaudeCancelKillsGroup(t *testing.T) {
	t.Parallel()
	srv := modeltest.NewAnthropic(t, modeltest.AnthTurn{Bash: "sleep 300", Text: "never"})
	rig := newClaudeRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sleeping := make(chan struct{})
	var cancelled time.Time
	h := &claudeHost{onEmit: func(ev agent.Event) {
		if ev.Type != protocol.EventToolCall {
			return
		}
		go func() { // cancel once the tool's sleep runs
			defer close(sleeping)
			for ctx.Err() == nil {
				for _, p := range claudeProcsIn(rig.cwd) {
					if strings.HasSuffix(p, ":sleep") {
						cancelled = time.Now()
						cancel()
						return
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}}
	res, err := agent.Claude{}.Run(ctx, rig.request(srv, "sleep a while", "bypassPermissions"), h)
	stopped := time.Now()
	<-sleeping
	if !errors.Is(err, context.Canceled) || res.Status != "failed" {
		t.Fatalf("Run = %+v, %v; want failed with context.Canceled", res, err)
	}
	// SIGTERM, then SIGKILL after procexec.KillGrace (2s): well within 10s.
	if took := stopped.Sub(cancelled); took > 10*time.Second {
		t.Errorf("Run returned %v after the cancel", took)
	}
	if procs := claudeProcsIn(rig.cwd); len(procs) != 0 {
		t.Errorf("processes left in the agent's cwd after Run returned: %v", procs)
	}
	t.Logf("Run returned %v after the cancel", stopped.Sub(cancelled))
}

func TestClaudeResume(t *testing.T) {
	t.Parallel()
	srv := modeltest.NewAnthropic(t,
		modeltest.AnthTurn{Text: "Noted: the word is pelican-7."},
		modeltest.AnthTurn{Text: "It was pelican-7."})
	rig := newClaudeRig(t)
	first := claudeRun(t, rig.request(srv, "remember the word pelican-7", "default"), &claudeHost{})
	claudeCompleted(t, first)
	req := rig.request(srv, "which word did I give you?", "default")
	req.Resume = first.AgentSession
	h := &claudeHost{}
	second := claudeRun(t, req, h)
	claudeCompleted(t, second)
	conv := srv.Conversation()
	if len(conv) != 2 {
		t.Fatalf("stand-in saw %d conversation requests, want 2", len(conv))
	}
	ctxt := conv[1].Text()
	for _, want := range []string{"remember the word pelican-7", "Noted: the word is pelican-7.", "which word did I give you?"} {
		if !strings.Contains(ctxt, want) {
			t.Errorf("resumed request lacks %q:\n%s", want, ctxt)
		}
	}
	if strings.Contains(conv[0].Text(), "which word") {
		t.Error("first request already had the second prompt")
	}
}

func TestClaudeMissingBinary(t *testing.T) {
	t.Parallel()
	req := agent.Request{Prompt: "hi", Cwd: t.TempDir(), Binary: "/nonexistent/claude", Env: []string{"HOME=/nonexistent"}}
	res, err := agent.Claude{}.Run(context.Background(), req, &claudeHost{})
	var e *agent.Error
	if !errors.As(err, &e) || e.Code != protocol.TaskAgentMissing {
		t.Fatalf("err = %v, want *Error %s", err, protocol.TaskAgentMissing)
	}
	if !strings.Contains(e.Message, "npm install -g @anthropic-ai/claude-code") {
		t.Errorf("message lacks install advice: %s", e.Message)
	}
	if res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentMissing {
		t.Errorf("result = %+v", res)
	}
}

func TestClaudeModelAPIError(t *testing.T) {
	t.Parallel()
	srv := modeltest.NewAnthropic(t, modeltest.AnthTurn{Fail: http.StatusBadRequest})
	rig := newClaudeRig(t)
	h := &claudeHost{}
	res := claudeRun(t, rig.request(srv, "say hello", "default"), h)
	if res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskModelAPI {
		t.Fatalf("result = %+v (err %v), want failed with %s", res, res.Err, protocol.TaskModelAPI)
	}
	if !strings.Contains(res.Err.Message, "stand-in failure 400") {
		t.Errorf("error message = %q, want the API's own message", res.Err.Message)
	}
	if ev := h.of(protocol.EventError); len(ev) != 1 || ev[0].Data["code"] != protocol.TaskModelAPI {
		t.Errorf("error events = %+v", ev)
	}
	h.check(t)
}

func TestClaudeExitWithoutResult(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nread line\necho '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"abc\"}'\necho 'out of cheese' >&2\nexit 3\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	req := agent.Request{Prompt: "hi", Cwd: t.TempDir(), Binary: bin, Env: []string{"PATH=/usr/bin:/bin"}}
	res, err := agent.Claude{}.Run(context.Background(), req, &claudeHost{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentCrashed {
		t.Fatalf("result = %+v, want failed with %s", res, protocol.TaskAgentCrashed)
	}
	if !strings.Contains(res.Err.Message, "out of cheese") || !strings.Contains(res.Err.Message, "exit status 3") {
		t.Errorf("message = %q, want the exit status and stderr tail", res.Err.Message)
	}
	if res.AgentSession != "abc" {
		t.Errorf("AgentSession = %q", res.AgentSession)
	}
}

func TestClaudeProtocolBroken(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\necho 'this is not json'\nexec sleep 300\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := agent.Request{Prompt: "hi", Cwd: t.TempDir(), Binary: bin, Env: []string{"PATH=/usr/bin:/bin"}}
	res, err := agent.Claude{}.Run(ctx, req, &claudeHost{})
	if err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (ctx %v), want it to give up on its own", err, ctx.Err())
	}
	if res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskAgentCrashed || !strings.Contains(res.Err.Message, "bad output line") {
		t.Fatalf("result = %+v, want failed with %s about the bad line", res, protocol.TaskAgentCrashed)
	}
}
