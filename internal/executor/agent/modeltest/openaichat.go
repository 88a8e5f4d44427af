package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// OpenAIChatCommandMarker in the last user message makes the chat
// completions stand-in call the agent's shell tool with the rest of that
// line as the command.
const OpenAIChatCommandMarker = "run the shell command: "

// Answers of the chat completions stand-in.
const (
	OpenAIChatText  = "Hello from the chat completions stand-in."
	OpenAIChatDone  = "The command finished."
	OpenAIChatTitle = "Stand-in title"
)

// OpenAIChat is a stand-in for an OpenAI-compatible chat completions API
// (POST /v1/chat/completions, stream:true): a plain turn answers
// OpenAIChatText; a turn whose last user message holds
// OpenAIChatCommandMarker calls the agent's shell tool (bash, shell, ...
// found in the request's tools) and, after the tool message, answers
// OpenAIChatDone, " Tool said: " and the tool message; one holding
// RecallMarker answers with the earlier user messages (recall); a request
// without tools (a title request) gets OpenAIChatTitle. Streams end with finish_reason, a usage chunk and
// [DONE]. Every request and the API key it carried are recorded.
type OpenAIChat struct {
	Arrivals
	URL string // ends in /v1

	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []OpenAIChatRequest
	refuse int // HTTP status to answer every request with (0: serve)
}

// OpenAIChatRequest is one request the stand-in saw.
type OpenAIChatRequest struct {
	At   time.Time // when the stand-in had read it
	Path string
	Key  string // the bearer token
	Body json.RawMessage
	// Usage is what the answer reported: OpenAIChatUsage for every
	// answered completion; zero for a refusal or a path the stand-in
	// does not serve.
	Usage OpenAIUsage
	// Streamed: the answer was server-sent events (every completion's).
	Streamed bool
}

// OpenAIChatUsage is the usage every completion's stream reports.
var OpenAIChatUsage = OpenAIUsage{InputTokens: 13, CachedInputTokens: 4, OutputTokens: 5}

// NewOpenAIChat starts the stand-in; it stops when the test ends.
func NewOpenAIChat(t testing.TB) *OpenAIChat {
	o := ServeOpenAIChat()
	t.Cleanup(o.srv.Close)
	return o
}

// ServeOpenAIChat starts the stand-in outside a test (the suite's
// demomodel); the caller closes it.
func ServeOpenAIChat() *OpenAIChat {
	o := &OpenAIChat{}
	o.srv = httptest.NewServer(o.Arrivals.wrap(o.serve))
	o.URL = o.srv.URL + "/v1"
	return o
}

// Handler serves the stand-in's API, for a listener of the caller's.
func (o *OpenAIChat) Handler() http.Handler { return o.srv.Config.Handler }

// Close stops the server early (a dead model API).
func (o *OpenAIChat) Close() { o.srv.Close() }

// Refuse makes every later request fail with the HTTP status code (401:
// a refusal no client retries).
func (o *OpenAIChat) Refuse(code int) {
	o.mu.Lock()
	o.refuse = code
	o.mu.Unlock()
}

// Requests returns what the stand-in has seen so far.
func (o *OpenAIChat) Requests() []OpenAIChatRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpenAIChatRequest(nil), o.reqs...)
}

// Keys returns the distinct API keys seen.
func (o *OpenAIChat) Keys() []string {
	var keys []string
	for _, r := range o.Requests() {
		keys = append(keys, r.Key)
	}
	return distinct(keys)
}

type oaicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type oaicBody struct {
	Model    string        `json:"model"`
	Messages []oaicMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (o *OpenAIChat) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := OpenAIChatRequest{At: time.Now(), Path: r.URL.Path, Key: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), Body: body}
	served := r.URL.Path == "/v1/chat/completions"
	o.mu.Lock()
	refuse := o.refuse
	if refuse == 0 && served {
		req.Usage, req.Streamed = OpenAIChatUsage, true
	}
	o.reqs = append(o.reqs, req)
	o.mu.Unlock()
	if refuse != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refuse)
		_, _ = io.WriteString(w, `{"error":{"message":"refused by the stand-in","type":"invalid_request_error","code":"refused"}}`)
		return
	}
	if !served {
		http.Error(w, `{"error":{"message":"not in the stand-in"}}`, http.StatusNotFound)
		return
	}
	var b oaicBody
	_ = json.Unmarshal(body, &b)
	w.Header().Set("Content-Type", "text/event-stream")
	s := oaicStream{w: w, model: b.Model}
	last := oaicLast(b.Messages)
	cmd, isCmd := oaicCommand(last)
	said, recalled := recall(userTexts(b.Messages, func(m oaicMessage) (string, json.RawMessage) { return m.Role, m.Content }))
	switch {
	case len(b.Tools) == 0:
		s.text(OpenAIChatTitle)
		s.finish("stop")
	case last.Role == "tool":
		s.text(OpenAIChatDone)
		s.text(" Tool said: " + oaicText(last.Content))
		s.finish("stop")
	case recalled:
		s.text(said)
		s.finish("stop")
	case isCmd:
		s.toolCall(oaicShellTool(b), cmd)
		s.finish("tool_calls")
	default:
		half := len(OpenAIChatText) / 2
		s.text(OpenAIChatText[:half])
		s.text(OpenAIChatText[half:])
		s.finish("stop")
	}
}

func oaicLast(ms []oaicMessage) oaicMessage {
	if len(ms) == 0 {
		return oaicMessage{}
	}
	return ms[len(ms)-1]
}

// oaicText flattens a message's content (a string or a list of parts).
func oaicText(raw json.RawMessage) string { return contentText(raw, "\n") }

func oaicCommand(m oaicMessage) (string, bool) {
	if m.Role != "user" {
		return "", false
	}
	_, after, ok := strings.Cut(oaicText(m.Content), OpenAIChatCommandMarker)
	if !ok {
		return "", false
	}
	cmd, _, _ := strings.Cut(after, "\n")
	return strings.TrimSpace(cmd), true
}

func oaicShellTool(b oaicBody) string {
	for _, t := range b.Tools {
		if n := t.Function.Name; n == "bash" || strings.Contains(n, "shell") {
			return n
		}
	}
	return "bash"
}

type oaicStream struct {
	w     http.ResponseWriter
	model string
}

func (s oaicStream) send(v any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s oaicStream) chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1, "model": s.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
}

func (s oaicStream) text(t string) {
	s.send(s.chunk(map[string]any{"role": "assistant", "content": t}, nil))
}

func (s oaicStream) toolCall(name, cmd string) {
	args, _ := json.Marshal(map[string]string{"command": cmd, "description": "run it"})
	call := map[string]any{"index": 0, "id": "call_standin_1", "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
	s.send(s.chunk(map[string]any{"role": "assistant", "tool_calls": []any{call}}, nil))
}

func (s oaicStream) finish(reason string) {
	s.send(s.chunk(map[string]any{}, reason))
	usage := s.chunk(nil, nil)
	usage["choices"] = []any{}
	u := OpenAIChatUsage
	usage["usage"] = map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
		"total_tokens": u.InputTokens + u.OutputTokens, "prompt_tokens_details": map[string]any{"cached_tokens": u.CachedInputTokens}}
	s.send(usage)
	fmt.Fprint(s.w, "data: [DONE]\n\n")
}
