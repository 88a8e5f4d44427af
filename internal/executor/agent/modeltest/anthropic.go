// Package modeltest holds stand-in model servers for tests: each speaks
// one provider's streaming API on 127.0.0.1 and follows a script.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// AnthUsage is the usage one stand-in response reports.
type AnthUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_input_tokens"`
	CacheWriteTokens int64 `json:"cache_creation_input_tokens"`
}

// AnthTurn is one user turn of a scripted conversation. With Bash empty
// the model answers Text at once (or, when the turn's prompt holds
// RecallMarker, the earlier user messages: recall); otherwise it first
// asks for the Bash tool with that command and answers Text once the
// tool_result is back.
type AnthTurn struct {
	Text  string
	Bash  string
	Usage AnthUsage // of every response in this turn; zero: AnthDefaultUsage
	// Fail, when set, answers the turn with this HTTP status and an
	// Anthropic error body instead.
	Fail int
}

// AnthDefaultUsage is what a response reports when its turn sets none.
var AnthDefaultUsage = AnthUsage{InputTokens: 120, OutputTokens: 17, CacheReadTokens: 30, CacheWriteTokens: 8}

// AnthRequest is one POST /v1/messages the stand-in answered.
type AnthRequest struct {
	APIKey       string            // the x-api-key header
	Auth         string            // the Authorization header (a sign-in's bearer token)
	Conversation bool              // part of the script (it offered tools)
	Messages     []json.RawMessage // the request's messages
	Body         []byte
	Usage        AnthUsage // what the answer reported (zero: a failure)
	At           time.Time // when the stand-in had read it
}

// Anthropic is a stand-in of the Anthropic Messages API.
type Anthropic struct {
	Arrivals
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	script []AnthTurn
	next   int // script turns started
	// pending holds each Bash call's tool_use id, with its turn's index,
	// until the request carrying its tool_result has been answered. A map,
	// not the last call's id: conversations served side by side (two
	// people's prompts at once) each wait on their own call.
	pending map[string]int
	reqs    []AnthRequest
}

// NewAnthropic starts a stand-in on 127.0.0.1 that plays script, one
// AnthTurn per user turn; it is closed when the test ends. Requests
// that offer no tools (titles, quota checks) get a short text reply and
// do not advance the script.
func NewAnthropic(t testing.TB, script ...AnthTurn) *Anthropic {
	a := &Anthropic{t: t, script: script}
	a.Server = httptest.NewServer(a.Arrivals.wrap(a.serve))
	t.Cleanup(a.Close)
	return a
}

// ServeAnthropic is NewAnthropic outside a test (the make run demo):
// surprises are logged, and the caller closes it.
func ServeAnthropic(script ...AnthTurn) *Anthropic {
	a := &Anthropic{script: script}
	a.Server = httptest.NewServer(a.Arrivals.wrap(a.serve))
	return a
}

func (a *Anthropic) logf(fail bool, format string, args ...any) {
	switch {
	case a.t == nil:
		log.Printf(format, args...)
	case fail:
		a.t.Errorf(format, args...)
	default:
		a.t.Logf(format, args...)
	}
}

// Requests returns the message requests seen so far.
func (a *Anthropic) Requests() []AnthRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AnthRequest(nil), a.reqs...)
}

// Conversation returns the scripted (tool-offering) requests seen so far.
func (a *Anthropic) Conversation() []AnthRequest {
	var out []AnthRequest
	for _, r := range a.Requests() {
		if r.Conversation {
			out = append(out, r)
		}
	}
	return out
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodHead || (r.Method == http.MethodGet && r.URL.Path == "/"):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.messages(w, r)
	default:
		a.logf(false, "anthropic stand-in: unexpected %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

type anthBody struct {
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []json.RawMessage `json:"messages"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
}

func (a *Anthropic) messages(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	var body anthBody
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	req := AnthRequest{At: time.Now(), APIKey: r.Header.Get("x-api-key"), Auth: r.Header.Get("Authorization"), Conversation: len(body.Tools) > 0, Messages: body.Messages, Body: raw}
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	blocks, usage, ok := a.reply(req.Conversation, body.Messages)
	fail := 0
	if req.Conversation && a.next > 0 {
		fail = a.script[a.next-1].Fail
	}
	if fail == 0 {
		a.reqs[len(a.reqs)-1].Usage = usage
	}
	a.mu.Unlock()
	if fail != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"stand-in failure %d"}}`, fail)
		return
	}
	if !ok {
		a.logf(true, "anthropic stand-in: request %d is beyond the script", len(a.Requests()))
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"beyond the script"}}`, http.StatusBadRequest)
		return
	}
	anthStream(w, blocks, usage)
}

// anthContent is one content block of a reply: text or a Bash tool use.
type anthContent struct {
	text    string
	command string
	id      string
}

// reply picks the next response: the end of the current turn when msgs
// carry the tool_result of its Bash call, else the next turn. (Not the
// last message's shape: Claude Code merges a prompt that follows a tool
// turn into the message holding that turn's tool_result.) a.mu is held.
func (a *Anthropic) reply(conversation bool, msgs []json.RawMessage) ([]anthContent, AnthUsage, bool) {
	if !conversation {
		return []anthContent{{text: "Stand-in"}}, AnthUsage{InputTokens: 5, OutputTokens: 2}, true
	}
	for id, i := range a.pending {
		if anthHasResultOf(msgs, id) {
			delete(a.pending, id)
			turn := a.script[i]
			return []anthContent{{text: turn.Text}}, anthUsageOf(turn), true
		}
	}
	if a.next >= len(a.script) {
		return nil, AnthUsage{}, false
	}
	turn := a.script[a.next]
	a.next++
	if turn.Bash == "" {
		text := turn.Text
		if said, ok := recall(userTexts(msgs, anthRole)); ok {
			text = said
		}
		return []anthContent{{text: text}}, anthUsageOf(turn), true
	}
	id := fmt.Sprintf("toolu_standin%02d", a.next)
	if a.pending == nil {
		a.pending = map[string]int{}
	}
	a.pending[id] = a.next - 1
	return []anthContent{{text: "Running it."}, {command: turn.Bash, id: id}}, anthUsageOf(turn), true
}

func anthUsageOf(t AnthTurn) AnthUsage {
	if t.Usage == (AnthUsage{}) {
		return AnthDefaultUsage
	}
	return t.Usage
}

// anthRole is a message's role and content (userTexts' view of it).
func anthRole(raw json.RawMessage) (string, json.RawMessage) {
	var m anthMessage
	_ = json.Unmarshal(raw, &m)
	return m.Role, m.Content
}

// anthAfterToolResult says whether the last user message carries a
// tool_result (the request may end with a role "system" entry).
func anthAfterToolResult(msgs []json.RawMessage) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		var m anthMessage
		if json.Unmarshal(msgs[i], &m) != nil || m.Role != "user" {
			continue
		}
		var blocks []anthBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			return false // a plain string
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				return true
			}
		}
		return false
	}
	return false
}

// anthHasResultOf says whether a user message of msgs carries the
// tool_result of the tool use id.
func anthHasResultOf(msgs []json.RawMessage, id string) bool {
	for _, raw := range msgs {
		var m anthMessage
		var blocks []anthBlock
		if json.Unmarshal(raw, &m) != nil || m.Role != "user" || json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return true
			}
		}
	}
	return false
}

// AnthHasToolResult says whether any message of r carries a tool_result.
func (r AnthRequest) AnthHasToolResult() bool {
	return anthAfterToolResult(r.Messages)
}

// Text is every message of the request as one string, for assertions
// about what context the model was given.
func (r AnthRequest) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.Write(m)
		b.WriteByte('\n')
	}
	return b.String()
}

// anthStream writes one streamed message as SSE.
func anthStream(w http.ResponseWriter, blocks []anthContent, u AnthUsage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_standin")
	w.WriteHeader(http.StatusOK)
	stop := "end_turn"
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": "msg_standin", "type": "message", "role": "assistant", "model": "claude-standin",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": 1,
			"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
		},
	}})
	for i, c := range blocks {
		if c.command != "" {
			stop = "tool_use"
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{
				"type": "tool_use", "id": c.id, "name": "Bash", "input": map[string]any{},
			}})
			in, _ := json.Marshal(map[string]string{"command": c.command, "description": "Run " + c.command})
			half := len(in) / 2
			for _, part := range []string{string(in[:half]), string(in[half:])} {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		} else {
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": c.text}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
		},
	})
	send("message_stop", map[string]any{})
}
