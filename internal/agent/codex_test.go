package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/agent/modeltest"
)

const codexTestKey = "sk-codex-test-0123456789"

// codexHost records events and answers permission questions.
type codexHost struct {
	approve bool
	mu      sync.Mutex
	events  []Event
	asked   []string
	onAsk   func()
}

func (h *codexHost) Emit(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *codexHost) Ask(ctx context.Context, tool string, input json.RawMessage) Decision {
	h.mu.Lock()
	h.asked = append(h.asked, tool+" "+string(input))
	onAsk := h.onAsk
	h.mu.Unlock()
	if onAsk != nil {
		onAsk()
		<-ctx.Done()
		return Decision{Reason: "cancelled"}
	}
	if h.approve {
		return Decision{Approved: true, Reason: "test approves"}
	}
	return Decision{Reason: "test declines"}
}

func (h *codexHost) all() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// of returns the events of one type.
func (h *codexHost) of(typ string) []Event {
	var out []Event
	for _, ev := range h.all() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (h *codexHost) text() string {
	var b strings.Builder
	for _, ev := range h.of(TextDelta) {
		b.WriteString(ev.Data["text"].(string))
	}
	return b.String()
}

func (h *codexHost) log(t *testing.T) {
	t.Helper()
	for _, ev := range h.all() {
		d, _ := json.Marshal(ev.Data)
		t.Logf("event %s %s", ev.Type, d)
	}
}

// codexBinary is the CLI test/agents.sh installs, or AGOR_AGENT_CODEX.
func codexBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("AGOR_AGENT_CODEX")
	if bin == "" {
		bin = "../../test/.cache/agents/codex/node_modules/.bin/codex"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("codex CLI not found at %s (%v): run test/agents.sh, or set AGOR_AGENT_CODEX", abs, err)
	}
	return abs
}

// codexRequest is a request against the stand-in with its own HOME,
// CODEX_HOME and working directory.
func codexRequest(t *testing.T, srv *modeltest.OpenAIResponses, prompt, mode string) Request {
	t.Helper()
	home := t.TempDir()
	cwd := t.TempDir()
	return Request{
		TaskID: "task-1", Prompt: prompt, Cwd: cwd, PermissionMode: mode,
		Binary: codexBinary(t),
		Env: []string{
			"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"),
			"PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER"), "LANG=C.UTF-8",
			CodexBaseURLEnv + "=" + srv.URL, "OPENAI_API_KEY=" + codexTestKey,
		},
	}
}

func codexRun(t *testing.T, req Request, host *codexHost) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Codex{}.Run(ctx, req, host)
	host.log(t)
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}
	if res.Status != "completed" {
		t.Fatalf("status %q, error %v", res.Status, res.Err)
	}
	return res
}

var codexUsage = modeltest.OpenAIUsage{InputTokens: 120, CachedInputTokens: 20, OutputTokens: 30}

func TestCodexPlainTurn(t *testing.T) {
	t.Parallel()
	srv := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "Hello from the stand-in.", Usage: codexUsage})
	host := &codexHost{}
	res := codexRun(t, codexRequest(t, srv, "say hello", "default"), host)

	if got := host.text(); got != "Hello from the stand-in." {
		t.Errorf("text %q", got)
	}
	want := Usage{InputTokens: 120, CacheReadTokens: 20, OutputTokens: 30}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if res.AgentSession == "" || res.MessageCount != 1 {
		t.Errorf("result %+v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if reqs[0].Authorization != "Bearer "+codexTestKey {
		t.Errorf("model API saw Authorization %q", reqs[0].Authorization)
	}
	for _, ev := range host.all() {
		if strings.Contains(string(ev.Raw), codexTestKey) {
			t.Errorf("key in raw event %s", ev.Raw)
		}
	}
}
