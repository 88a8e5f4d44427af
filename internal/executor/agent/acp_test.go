package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// acpTestKey is the API key the tests hand the agents; the stand-ins must
// see it.
const acpTestKey = "agor-test-key-0123456789"

// acpHost is a fake Host: it records events and answers every
// permission question with decision.
type acpHost struct {
	decision Decision

	mu     sync.Mutex
	events []Event
	asked  []string
}

func (h *acpHost) Emit(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *acpHost) Ask(_ context.Context, tool string, _ json.RawMessage) Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, tool)
	return h.decision
}

func (h *acpHost) ofType(typ string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, ev := range h.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (h *acpHost) text() string {
	var b strings.Builder
	for _, ev := range h.ofType(protocol.EventTextDelta) {
		b.WriteString(ev.Data["text"].(string))
	}
	return b.String()
}

func (h *acpHost) dump(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		d, _ := json.Marshal(ev.Data)
		t.Logf("event %s %s", ev.Type, d)
		if os.Getenv("ACP_TEST_RAW") != "" && len(ev.Raw) > 0 {
			t.Logf("  raw %s", ev.Raw)
		}
	}
}

// acpCase is one agent under test: its adapter, binary, stand-in model
// server and what the stand-in answers.
type acpCase struct {
	name    string
	adapter Adapter
	binary  string
	env     func(t *testing.T) ([]string, acpStandIn)
	text    string // the plain turn's reply
	done    string // the reply after a tool result
	marker  string // makes the stand-in call the shell tool
	// usage is what the agent reports for the plain turn (one model call)
	// and toolUsage for the tool turn (two calls).
	usage, toolUsage Usage
	// deniedEnds: a refused tool call ends the turn, the model not told
	// (opencode); otherwise the refusal goes back to the model.
	deniedEnds bool
}

func acpCases(t *testing.T) []acpCase {
	return []acpCase{{
		name: "gemini",
		// One attempt, no fetch retries: a dead stand-in fails fast.
		adapter: NewGemini(map[string]any{"maxAttempts": 1, "retryFetchErrors": false}),
		binary:  agenttest.Binary(t, "gemini"),
		env: func(t *testing.T) ([]string, acpStandIn) {
			g := modeltest.NewGemini(t)
			bodies := func() (out []string) {
				for _, r := range g.Requests() {
					out = append(out, string(r.Body))
				}
				return out
			}
			return []string{"GEMINI_API_KEY=" + acpTestKey, "GOOGLE_GEMINI_BASE_URL=" + g.URL}, acpStandIn{g.Keys, g.Close, bodies}
		},
		text: modeltest.GeminiText, done: modeltest.GeminiDone, marker: modeltest.GeminiCommandMarker,
		// gemini sums its calls; its ACP reply has no cache figures.
		usage: Usage{InputTokens: 11, OutputTokens: 7}, toolUsage: Usage{InputTokens: 22, OutputTokens: 14},
	}, {
		name:    "opencode",
		adapter: NewOpencode(),
		binary:  agenttest.Binary(t, "opencode"),
		env: func(t *testing.T) ([]string, acpStandIn) {
			o := modeltest.NewOpenAIChat(t)
			bodies := func() (out []string) {
				for _, r := range o.Requests() {
					out = append(out, string(r.Body))
				}
				return out
			}
			// opencode retries a dead endpoint 5 times over ~1 minute
			// (SessionRetry, not configurable in 1.18), so its failing
			// model API refuses (401) instead: no retry, one error.
			refuse := func() { o.Refuse(401) }
			return []string{"OPENAI_API_KEY=" + acpTestKey, OpencodeBaseURLEnv + "=" + o.URL}, acpStandIn{o.Keys, refuse, bodies}
		},
		text: modeltest.OpenAIChatText, done: modeltest.OpenAIChatDone, marker: modeltest.OpenAIChatCommandMarker,
		// 13 prompt tokens of which 4 cached, 5 out per call; opencode
		// 1.18's reply holds its last call's figures, not the turn's sum.
		usage: Usage{InputTokens: 9, OutputTokens: 5, CacheReadTokens: 4}, toolUsage: Usage{InputTokens: 9, OutputTokens: 5, CacheReadTokens: 4},
		deniedEnds: true,
	}}
}

// acpStandIn is the stand-in model server of a case.
type acpStandIn struct {
	keys   func() []string // distinct API keys seen
	stop   func()          // make the model API fail: dead, or refusing
	bodies func() []string // request bodies seen
}

// request is a turn with its own cwd, HOME and XDG dirs.
func (c acpCase) request(t *testing.T, prompt string) (Request, acpStandIn) {
	dir := t.TempDir()
	cwd, home := filepath.Join(dir, "work"), filepath.Join(dir, "home")
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"HOME=" + home, "USER=" + os.Getenv("USER"), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
	}
	extra, model := c.env(t)
	return Request{
		SessionID: "s1", TaskID: "t1", Prompt: prompt, Cwd: cwd, PermissionMode: "default",
		Binary: c.binary, Env: append(env, extra...),
	}, model
}

func (c acpCase) run(t *testing.T, ctx context.Context, req Request, h *acpHost) (Result, error) {
	return c.runWith(t, ctx, req, h, h)
}

func (c acpCase) runWith(t *testing.T, ctx context.Context, req Request, host Host, h *acpHost) (Result, error) {
	t.Helper()
	start := time.Now()
	res, err := c.adapter.Run(ctx, req, host)
	t.Logf("%s: %v, status %s, err %v, result err %v, usage %+v, session %q", c.name, time.Since(start).Round(time.Millisecond),
		res.Status, err, res.Err, res.Usage, res.AgentSession)
	if t.Failed() || testing.Verbose() {
		h.dump(t)
	}
	return res, err
}

// TestACPAgents drives the real CLIs (test/agents.sh installs them):
// ~1.5 min on an idle 2-core machine, more under load; -short skips it.
func TestACPAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real agent CLIs; not in -short")
	}
	for _, c := range acpCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Run("plain", func(t *testing.T) { testACPPlain(t, c) })
			t.Run("allow", func(t *testing.T) { testACPTool(t, c, true) })
			t.Run("deny", func(t *testing.T) { testACPTool(t, c, false) })
			t.Run("bypass", func(t *testing.T) { testACPBypass(t, c) })
			t.Run("resume", func(t *testing.T) { testACPResume(t, c) })
			t.Run("cancel", func(t *testing.T) { testACPCancel(t, c) })
			t.Run("model_down", func(t *testing.T) { testACPModelDown(t, c) })
		})
	}
}

func testACPPlain(t *testing.T, c acpCase) {
	req, model := c.request(t, "Say hello.")
	h := &acpHost{}
	res, err := c.run(t, t.Context(), req, h)
	if err != nil || res.Status != "completed" {
		t.Fatalf("plain turn: status %q, err %v", res.Status, err)
	}
	if got := h.text(); got != c.text {
		t.Errorf("text deltas = %q, want %q", got, c.text)
	}
	if res.AgentSession == "" || res.MessageCount < 1 {
		t.Errorf("agent session %q, messages %d", res.AgentSession, res.MessageCount)
	}
	checkACPUsage(t, h, res, c.usage)
	if len(h.ofType(protocol.EventMessageStart)) == 0 || len(h.ofType(protocol.EventMessageStop)) == 0 {
		t.Error("no message_start/message_stop around the reply")
	}
	for _, ev := range h.ofType(protocol.EventTextDelta) {
		if len(ev.Raw) == 0 || strings.Contains(string(ev.Raw), acpTestKey) {
			t.Errorf("text_delta raw %q: want the notification, without the key", ev.Raw)
		}
	}
	if k := model.keys(); len(k) != 1 || k[0] != acpTestKey {
		t.Errorf("stand-in saw keys %q, want only %q", k, acpTestKey)
	}
}

func testACPTool(t *testing.T, c acpCase, allow bool) {
	req, model := c.request(t, "Make a file. "+c.marker+"echo printed-by-agent; touch made-by-agent")
	h := &acpHost{decision: Decision{Approved: allow, Reason: "test says so"}}
	res, err := c.run(t, t.Context(), req, h)
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	_, statErr := os.Stat(filepath.Join(req.Cwd, "made-by-agent"))
	if allow != (statErr == nil) {
		t.Errorf("approved %v, but stat made-by-agent: %v", allow, statErr)
	}
	if len(h.asked) != 1 {
		t.Errorf("daemon asked %d times (%q), want once", len(h.asked), h.asked)
	}
	decided := h.ofType(protocol.EventPermissionDecided)
	if len(h.ofType(protocol.EventPermissionAsked)) != 1 || len(decided) != 1 || decided[0].Data["approved"] != allow {
		t.Errorf("permission events: asked %d, decided %v", len(h.ofType(protocol.EventPermissionAsked)), decided)
	}
	if len(h.ofType(protocol.EventToolCall)) == 0 {
		t.Error("no tool_call event")
	}
	bodies := model.bodies()
	switch {
	case len(bodies) == 0:
		t.Fatal("model saw no request")
	case len(bodies) < 2 && (allow || !c.deniedEnds):
		t.Fatalf("model saw %d requests; want the tool call's and the one with its result", len(bodies))
	}
	t.Logf("last model request: ...%s", acpTail(bodies[len(bodies)-1], 600))
	if !allow && !acpToldOfDenial(h) {
		t.Errorf("neither the model nor a tool result says the call was denied; text %q", h.text())
	}
	if allow {
		if res.Status != "completed" || !strings.HasPrefix(h.text(), c.done) {
			t.Errorf("after the tool: status %q, text %q, want %q...", res.Status, h.text(), c.done)
		}
		if results := h.ofType(protocol.EventToolResult); len(results) == 0 || results[0].Data["is_error"] != false {
			t.Errorf("tool results %v, want one that succeeded", results)
		} else if out, _ := results[0].Data["output"].(string); !strings.Contains(out, "printed-by-agent") {
			t.Errorf("tool result's output %q: want what the command printed", out) // gemini 0.61 sends content: []
		}
		checkACPUsage(t, h, res, c.toolUsage)
	}
}

// checkACPUsage: the result and the one usage event carry the agent's figures.
func checkACPUsage(t *testing.T, h *acpHost, res Result, want Usage) {
	t.Helper()
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	evs := h.ofType(protocol.EventUsage)
	if len(evs) != 1 || fmt.Sprint(evs[0].Data["input_tokens"], evs[0].Data["output_tokens"], evs[0].Data["cache_read_tokens"]) !=
		fmt.Sprint(want.InputTokens, want.OutputTokens, want.CacheReadTokens) {
		t.Errorf("usage events %v, want one with %+v", evs, want)
	}
}

func testACPCancel(t *testing.T, c acpCase) {
	// The permission question never gets an answer until the turn is
	// cancelled: the agent sits mid-turn with its tool pending.
	req, _ := c.request(t, c.marker+"sleep 60")
	h := &acpBlockingHost{asked: make(chan struct{}), acpHost: &acpHost{}}
	ctx, cancel := context.WithCancel(t.Context())
	var res Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = c.runWith(t, ctx, req, h, h.acpHost)
	}()
	select {
	case <-h.asked:
	case <-done:
		t.Fatalf("turn ended before the permission question: %v %v", res, err)
	case <-time.After(2 * time.Minute):
		t.Fatal("no permission question")
	}
	pgid := h.pgid(req)
	cancel()
	start := time.Now()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancellation")
	}
	t.Logf("Run returned %v after cancel", time.Since(start))
	if !errors.Is(err, context.Canceled) || res.Status != "failed" {
		t.Errorf("cancelled turn: status %q, err %v", res.Status, err)
	}
	if pgid == 0 {
		t.Fatal("found no agent process group leader in the turn's cwd")
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still there after Run returned: %v", pgid, err)
	}
}

// acpBlockingHost answers no permission question until ctx ends.
type acpBlockingHost struct {
	*acpHost
	once  sync.Once
	asked chan struct{}
}

func (h *acpBlockingHost) Ask(ctx context.Context, tool string, input json.RawMessage) Decision {
	h.once.Do(func() { close(h.asked) })
	<-ctx.Done()
	return Decision{Reason: "cancelled"}
}

// pgid finds the agent's process group: the process whose cwd is req.Cwd
// and which leads its group.
func (h *acpBlockingHost) pgid(req Request) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := 0
		for _, ch := range e.Name() {
			if ch < '0' || ch > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(ch-'0')
		}
		if pid <= 0 {
			continue
		}
		if cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); cwd != req.Cwd {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pid {
			return pid
		}
	}
	return 0
}

func testACPModelDown(t *testing.T, c acpCase) {
	req, model := c.request(t, "Say hello.")
	model.stop()
	h := &acpHost{}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	res, err := c.run(t, ctx, req, h)
	if ctx.Err() != nil {
		t.Fatalf("a failing model API did not fail the turn within 90s")
	}
	if err == nil || res.Status != "failed" || res.Err == nil || res.Err.Code != protocol.TaskModelAPI {
		t.Fatalf("failing model API: status %q, err %v, result err %v; want %s", res.Status, err, res.Err, protocol.TaskModelAPI)
	}
}

func TestACPMissingBinary(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"gemini", "opencode"} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		home := t.TempDir()
		res, err := a.Run(t.Context(), Request{Cwd: home, Binary: filepath.Join(home, "no-such-cli"), Env: []string{"HOME=" + home}}, &acpHost{})
		var e *Error
		if !errors.As(err, &e) || e.Code != protocol.TaskAgentMissing || res.Err == nil || res.Err.Code != protocol.TaskAgentMissing || res.Status != "failed" {
			t.Errorf("%s: res %+v, err %v; want %s", name, res, err, protocol.TaskAgentMissing)
		}
	}
}

func acpTail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// acpToldOfDenial: gemini hands the denial to the model as the tool's
// response (the stand-in repeats it); opencode ends the turn with a failed
// tool result saying so.
func acpToldOfDenial(h *acpHost) bool {
	said := []string{h.text()}
	for _, ev := range h.ofType(protocol.EventToolResult) {
		if ev.Data["is_error"] == true {
			said = append(said, ev.Data["output"].(string))
		}
	}
	for _, s := range said {
		s = strings.ToLower(s)
		if strings.Contains(s, "cancel") || strings.Contains(s, "reject") || strings.Contains(s, "denied") {
			return true
		}
	}
	return false
}

// testACPBypass: bypassPermissions approves without the daemon, and the
// events still say so.
func testACPBypass(t *testing.T, c acpCase) {
	req, _ := c.request(t, c.marker+"touch made-by-agent")
	req.PermissionMode = "bypassPermissions"
	h := &acpHost{decision: Decision{Approved: false, Reason: "the daemon must not be asked"}}
	res, err := c.run(t, t.Context(), req, h)
	if err != nil || res.Status != "completed" {
		t.Fatalf("bypass turn: status %q, err %v", res.Status, err)
	}
	if _, err := os.Stat(filepath.Join(req.Cwd, "made-by-agent")); err != nil {
		t.Errorf("command did not run: %v", err)
	}
	if len(h.asked) != 0 {
		t.Errorf("daemon asked %q", h.asked)
	}
	decided := h.ofType(protocol.EventPermissionDecided)
	if len(decided) != 1 || decided[0].Data["approved"] != true || decided[0].Data["reason"] != "bypassPermissions" {
		t.Errorf("permission_decided %v, want one approved for bypassPermissions", decided)
	}
}

// testACPResume: each later turn, on a process of its own, continues the
// first one's agent session; the model sees every earlier prompt again
// and the history is not reported as new events. Twice: gemini-cli 0.61's
// session cleanup deleted the session when its second resume started.
func testACPResume(t *testing.T, c acpCase) {
	req, model := c.request(t, "The first prompt.")
	first, err := c.run(t, t.Context(), req, &acpHost{})
	if err != nil || first.AgentSession == "" {
		t.Fatalf("first turn: %v, session %q", err, first.AgentSession)
	}
	prompts := []string{"The first prompt."}
	for _, prompt := range []string{"The second prompt.", "The third prompt."} {
		req.Prompt, req.Resume = prompt, first.AgentSession
		prompts = append(prompts, prompt)
		h := &acpHost{}
		res, err := c.run(t, t.Context(), req, h)
		if err != nil || res.Status != "completed" {
			t.Fatalf("resumed turn %q: status %q, err %v", prompt, res.Status, err)
		}
		if res.AgentSession != first.AgentSession {
			t.Errorf("agent session %q, want %q", res.AgentSession, first.AgentSession)
		}
		if got := h.text(); got != c.text {
			t.Errorf("resumed turn's text %q, want only %q (no replayed history)", got, c.text)
		}
		bodies := model.bodies()
		last := bodies[len(bodies)-1]
		for _, want := range prompts {
			if !strings.Contains(last, want) {
				t.Errorf("the model's last request lacks %q: ...%s", want, acpTail(last, 400))
			}
		}
	}
}
