package modeltest

// A stand-in for the OpenAI Responses API (POST /v1/responses, streamed
// as server-sent events), the model API Codex calls.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// OpenAIUsage is the usage a response reports, in OpenAI's terms:
// InputTokens includes CachedInputTokens (input_tokens and its
// input_tokens_details.cached_tokens; prompt_tokens and
// prompt_tokens_details.cached_tokens in Chat Completions).
type OpenAIUsage struct {
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
}

// OpenAIResponsesScript says how the stand-in answers. With Command
// empty every request gets the message Text. With Command set, a request
// whose input has no function_call_output after its last user message
// gets a function_call of the shell tool the request declares running
// Command; while its output says Codex's command still runs, a call of
// write_stdin waiting for it; once it has ended, the message Text. A
// request whose last user message holds RecallMarker gets the earlier
// user messages instead (recall), whatever the script.
type OpenAIResponsesScript struct {
	Text    string
	Command string
	Usage   OpenAIUsage // per response
	// FailStatus, when set, answers every request with this HTTP status
	// and an OpenAI-style error body instead.
	FailStatus int
}

// OpenAIRequest is one request the stand-in saw.
type OpenAIRequest struct {
	At            time.Time       // when the stand-in had read it
	Authorization string          // the Authorization header as sent
	Body          json.RawMessage // the whole request body
	Model         string
	ShellTool     string   // name of the shell tool declared, "" if none
	UserTexts     []string // text of every user message in the input, in order
	AssistantText []string // text of every assistant message in the input
	// ToolOutputs are the outputs of function_call_output items after the
	// last user message.
	ToolOutputs        []string
	PreviousResponseID string
	Usage              OpenAIUsage // what the answer reported (zero: a failure)
	Streamed           bool        // the answer was server-sent events (every success)

	userParts  []string // the user messages' text parts, for recall
	latestUser int      // where the last user message's begin
	pollTool   bool     // write_stdin is declared (Codex's unified exec)
	codeMode   bool     // the shell is code mode's exec: a script calls exec_command
}

// OpenAIResponses is a running stand-in. URL ends in /v1 (a provider's
// base_url).
type OpenAIResponses struct {
	Arrivals
	URL    string
	script OpenAIResponsesScript
	srv    *httptest.Server

	mu   sync.Mutex
	reqs []OpenAIRequest
	n    int
}

// NewOpenAIResponses starts a stand-in, closed when the test ends.
func NewOpenAIResponses(t testing.TB, script OpenAIResponsesScript) *OpenAIResponses {
	t.Helper()
	s := ServeOpenAIResponses(script)
	t.Cleanup(s.srv.Close)
	return s
}

// ServeOpenAIResponses starts a stand-in outside a test (the suite's
// demomodel); the caller closes it.
func ServeOpenAIResponses(script OpenAIResponsesScript) *OpenAIResponses {
	s := &OpenAIResponses{script: script}
	s.srv = httptest.NewServer(s.Arrivals.wrap(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Handler serves the stand-in's API, for a listener of the caller's.
func (s *OpenAIResponses) Handler() http.Handler { return s.srv.Config.Handler }

// Requests returns a copy of the requests seen so far.
func (s *OpenAIResponses) Requests() []OpenAIRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OpenAIRequest(nil), s.reqs...)
}

func (s *OpenAIResponses) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	var body oairBody
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := body.summary(raw, r.Header.Get("Authorization"))
	if s.script.FailStatus == 0 {
		req.Usage, req.Streamed = s.script.Usage, true
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.n++
	id := fmt.Sprintf("resp_%d", s.n)
	s.mu.Unlock()

	if s.script.FailStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.script.FailStatus)
		fmt.Fprintf(w, `{"error":{"message":"stand-in failure %d","type":"server_error","code":null}}`, s.script.FailStatus)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	events := s.answer(id, req, body.shellParams())
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// answer is the list of events for one response.
func (s *OpenAIResponses) answer(id string, req OpenAIRequest, params map[string]json.RawMessage) []map[string]any {
	var item map[string]any
	text := s.script.Text
	said, recalled := recall(req.userParts, req.latestUser)
	if recalled {
		text = said
	}
	if call, args := s.toolCall(req, params, recalled); call != "" && req.codeMode {
		item = map[string]any{
			"type": "custom_tool_call", "id": "ctc_" + id, "call_id": "call_" + id,
			"name": call, "input": args, "status": "completed",
		}
	} else if call != "" {
		b, _ := json.Marshal(args)
		item = map[string]any{
			"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id,
			"name": call, "arguments": string(b), "status": "completed",
		}
	} else {
		item = map[string]any{
			"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}},
		}
	}
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	if item["type"] == "message" {
		added["content"] = []any{}
		added["status"] = "in_progress"
	}
	u := s.script.Usage
	events := []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress"}},
		{"type": "response.output_item.added", "output_index": 0, "item": added},
	}
	if item["type"] == "message" {
		events = append(events, map[string]any{
			"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
			"item_id": item["id"], "delta": text,
		})
	}
	return append(events,
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item},
		map[string]any{"type": "response.completed", "response": map[string]any{
			"id": id, "status": "completed",
			"usage": map[string]any{
				"input_tokens":          u.InputTokens,
				"input_tokens_details":  map[string]any{"cached_tokens": u.CachedInputTokens},
				"output_tokens":         u.OutputTokens,
				"output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens":          u.InputTokens + u.OutputTokens,
			},
		}},
	)
}

// toolCall is the tool the stand-in calls next, with its arguments ("":
// none, the answer is Text): the shell tool running Command first; then,
// while Codex says the command still runs (it yields after 10 s by
// default, and a turn that ended there would leave it running past the
// task), write_stdin with no input, which waits for more of it, as a
// model waits for a long build.
func (s *OpenAIResponses) toolCall(req OpenAIRequest, params map[string]json.RawMessage, recalled bool) (string, any) {
	if recalled || s.script.Command == "" || req.ShellTool == "" {
		return "", nil
	}
	if len(req.ToolOutputs) == 0 && req.codeMode {
		return req.ShellTool, codeModeCall(s.script.Command)
	}
	if len(req.ToolOutputs) == 0 {
		return req.ShellTool, oairShellArgs(params, s.script.Command)
	}
	m := stillRunning.FindStringSubmatch(req.ToolOutputs[len(req.ToolOutputs)-1])
	if m == nil || !req.pollTool {
		return "", nil
	}
	sid, _ := strconv.Atoi(m[1])
	return "write_stdin", map[string]any{"session_id": sid, "chars": "", "yield_time_ms": 30000}
}

// codeModeCall is the JavaScript a model gives Codex's code mode (its
// terminal UI's default in 0.169: one custom tool, exec, whose script
// calls the nested tools) to run command and hand back its output.
func codeModeCall(command string) string {
	q, _ := json.Marshal(command)
	return "const r = await tools.exec_command({ cmd: " + string(q) + " });\ntext(r.output ?? JSON.stringify(r));\n"
}

// stillRunning is how Codex's exec_command says the command has not ended.
var stillRunning = regexp.MustCompile(`Process running with session ID ([0-9]+)`)

// oairShellArgs builds the shell tool's arguments from its declared
// parameters: exec_command takes {cmd}, the older shell tool {command:[argv]}.
func oairShellArgs(params map[string]json.RawMessage, command string) map[string]any {
	if _, ok := params["cmd"]; ok {
		return map[string]any{"cmd": command}
	}
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(params["command"], &p)
	if p.Type == "array" {
		return map[string]any{"command": []string{"bash", "-lc", command}}
	}
	return map[string]any{"command": command}
}

type oairBody struct {
	Model              string     `json:"model"`
	PreviousResponseID string     `json:"previous_response_id"`
	Input              []oairItem `json:"input"`
	Tools              []oairTool `json:"tools"`
}

type oairItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
	// Tools of an additional_tools item: namespaces of tools, where
	// Codex's UI declares its code mode's exec.
	Tools []struct {
		Type  string     `json:"type"`
		Tools []oairTool `json:"tools"`
	} `json:"tools"`
}

type oairTool struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Parameters struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"parameters"`
}

var oairShellNames = []string{"exec_command", "shell", "shell_command", "local_shell"}

func (b *oairBody) shellTool() *oairTool {
	for _, name := range oairShellNames {
		for i := range b.Tools {
			if b.Tools[i].Name == name || (name == "local_shell" && b.Tools[i].Type == name) {
				return &b.Tools[i]
			}
		}
	}
	return nil
}

func (b *oairBody) shellParams() map[string]json.RawMessage {
	if t := b.shellTool(); t != nil {
		return t.Parameters.Properties
	}
	return nil
}

func (b *oairBody) summary(raw []byte, auth string) OpenAIRequest {
	req := OpenAIRequest{At: time.Now(), Authorization: auth, Body: raw, Model: b.Model, PreviousResponseID: b.PreviousResponseID}
	if t := b.shellTool(); t != nil {
		req.ShellTool = t.Name
	}
	for _, t := range b.Tools {
		req.pollTool = req.pollTool || t.Name == "write_stdin"
	}
	for _, it := range b.Input {
		if it.Type == "additional_tools" && req.ShellTool == "" && codeModeExec(it) {
			req.ShellTool, req.codeMode = "exec", true
		}
		switch {
		case it.Type == "message" && it.Role == "user":
			req.UserTexts = append(req.UserTexts, oairText(it.Content))
			req.latestUser = len(req.userParts)
			req.userParts = append(req.userParts, contentParts(it.Content)...)
			req.ToolOutputs = nil
		case it.Type == "message" && it.Role == "assistant":
			req.AssistantText = append(req.AssistantText, oairText(it.Content))
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			req.ToolOutputs = append(req.ToolOutputs, oairText(it.Output))
		}
	}
	return req
}

// codeModeExec says it declares code mode's exec (a custom tool).
func codeModeExec(it oairItem) bool {
	for _, ns := range it.Tools {
		for _, t := range ns.Tools {
			if t.Type == "custom" && t.Name == "exec" {
				return true
			}
		}
	}
	return false
}

// oairText flattens a content field: a string or a list of parts with text.
func oairText(c json.RawMessage) string { return contentText(c, "") }
