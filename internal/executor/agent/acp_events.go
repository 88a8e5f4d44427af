package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// acpTurn normalises one prompt's updates and permission questions.
// Updates come from the connection's read loop and questions from
// goroutines of their own: mu keeps its state, and the order of what it
// emits, consistent (it is not held while the daemon decides).
type acpTurn struct {
	ctx  context.Context // the turn's: ends when it is stopped
	host Host
	mode string

	mu        sync.Mutex
	inMessage bool
	messages  int
	usage     Usage
	calls     map[string]bool // tool calls already reported
	// toolOutput finds a finished call's output the update left out.
	toolOutput func(toolCallID string) string
}

// result ends the turn's message and settles its Result from the
// prompt's reply.
func (t *acpTurn) result(sid string, pr acpPromptResult, err error) (Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endMessage()
	res := Result{Status: "completed", MessageCount: t.messages, Usage: t.usage, AgentSession: sid}
	if err != nil {
		res.Status = "failed"
		var rpcErr *rpc.Error
		if errors.As(err, &rpcErr) {
			// A prompt the agent answers with an error is nearly always
			// the model API failing (the agent itself is still talking).
			res.Err = &Error{Code: protocol.TaskModelAPI, Message: err.Error()}
		}
		return res, err
	}
	t.promptUsage(pr, &res)
	switch pr.StopReason {
	case "end_turn":
	case "cancelled":
		res.Status, res.Err = "failed", &Error{Code: "cancelled", Message: "the agent cancelled the turn"}
	case "refusal":
		res.Status, res.Err = "failed", &Error{Code: protocol.TaskModelAPI, Message: "the model refused"}
	default: // max_tokens, max_turn_requests, or one this client does not know
		res.Status, res.Err = "failed", &Error{Code: protocol.TaskModelAPI, Message: "the turn stopped: " + pr.StopReason}
	}
	return res, nil
}

// promptUsage takes token figures from the prompt's reply when an agent
// gives them (see ACP's doc comment).
func (t *acpTurn) promptUsage(pr acpPromptResult, res *Result) {
	u := pr.Usage
	if u == nil && len(pr.Meta) > 0 {
		var meta struct {
			Usage *acpUsage `json:"usage"`
			Quota *struct { // gemini-cli
				TokenCount struct {
					InputTokens  int64 `json:"input_tokens"`
					OutputTokens int64 `json:"output_tokens"`
				} `json:"token_count"`
			} `json:"quota"`
		}
		if json.Unmarshal(pr.Meta, &meta) == nil {
			u = meta.Usage
			if q := meta.Quota; u == nil && q != nil {
				u = &acpUsage{InputTokens: q.TokenCount.InputTokens, OutputTokens: q.TokenCount.OutputTokens}
			}
		}
	}
	if u == nil {
		return
	}
	res.Usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CachedReadTokens, CacheWriteTokens: u.CachedWriteTokens}
	t.host.Emit(Event{Type: protocol.EventUsage, Data: map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CachedReadTokens, "cache_write_tokens": u.CachedWriteTokens,
	}})
}

// acpUpdate is the union of the session/update kinds this client reads.
type acpUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       json.RawMessage
	ToolCallID    string          `json:"toolCallId"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	RawInput      json.RawMessage `json:"rawInput"`
	RawOutput     json.RawMessage `json:"rawOutput"`
}

// update reports one session/update; raw is the notification as read.
func (t *acpTurn) update(params json.RawMessage, raw json.RawMessage) {
	var p struct {
		Update json.RawMessage `json:"update"`
	}
	var u acpUpdate
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Update, &u) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch u.SessionUpdate {
	case "agent_message_chunk":
		if text := acpText(u.Content); text != "" {
			t.startMessage()
			t.host.Emit(Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": text}, Raw: raw})
		}
	case "agent_thought_chunk":
		if text := acpText(u.Content); text != "" {
			t.host.Emit(Event{Type: protocol.EventThinkingDelta, Data: map[string]any{"text": text}, Raw: raw})
		}
	case "tool_call":
		t.toolCall(u, p.Update, raw)
	case "tool_call_update":
		if u.Status == "completed" || u.Status == "failed" {
			t.toolCall(u, p.Update, raw) // when no tool_call came first
			out := acpOutput(u.Content, u.RawOutput)
			if out == "" && t.toolOutput != nil {
				out = t.toolOutput(u.ToolCallID)
			}
			t.host.Emit(Event{Type: protocol.EventToolResult, Data: map[string]any{
				"tool_use_id": u.ToolCallID, "output": out, "is_error": u.Status == "failed",
			}, Raw: raw})
		}
	}
}

// toolCall reports a tool call once, however it first shows up (gemini
// announces a call needing permission only in the permission request).
// The caller holds mu, as for startMessage and endMessage.
func (t *acpTurn) toolCall(u acpUpdate, call, raw json.RawMessage) {
	if t.calls[u.ToolCallID] {
		return
	}
	if t.calls == nil {
		t.calls = map[string]bool{}
	}
	t.calls[u.ToolCallID] = true
	t.endMessage()
	t.messages++
	t.host.Emit(Event{Type: protocol.EventToolCall, Data: map[string]any{
		"tool_use_id": u.ToolCallID, "tool_name": acpToolName(u.Title, u.Kind), "tool_input": acpInput(u.RawInput, call),
		"kind": u.Kind,
	}, Raw: raw})
}

func (t *acpTurn) startMessage() {
	if !t.inMessage {
		t.inMessage = true
		t.messages++
		t.host.Emit(Event{Type: protocol.EventMessageStart, Data: map[string]any{"role": "assistant"}})
	}
}

func (t *acpTurn) endMessage() {
	if t.inMessage {
		t.inMessage = false
		t.host.Emit(Event{Type: protocol.EventMessageStop, Data: map[string]any{"role": "assistant"}})
	}
}

// acpPermission is session/request_permission's params.
type acpPermission struct {
	ToolCall json.RawMessage `json:"toolCall"`
	Options  []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// permission decides one question (see ACP's doc comment for the modes)
// and returns the RequestPermissionResponse; raw is the request as read.
// ctx ends with the turn or the connection.
func (t *acpTurn) permission(ctx context.Context, params, raw json.RawMessage) any {
	var p acpPermission
	var call acpUpdate
	_ = json.Unmarshal(params, &p)
	_ = json.Unmarshal(p.ToolCall, &call)
	name, input := acpToolName(call.Title, call.Kind), acpInput(call.RawInput, p.ToolCall)
	t.mu.Lock()
	t.toolCall(call, p.ToolCall, raw)
	t.host.Emit(Event{Type: protocol.EventPermissionAsked, Data: map[string]any{"tool_name": name, "tool_input": input, "kind": call.Kind},
		Raw: raw})
	t.mu.Unlock()
	d, decided := t.byMode(call.Kind)
	if !decided {
		d = t.host.Ask(ctx, name, input)
	}
	t.mu.Lock()
	t.host.Emit(Event{Type: protocol.EventPermissionDecided, Data: map[string]any{"tool_name": name, "approved": d.Approved, "reason": d.Reason}})
	t.mu.Unlock()
	want := []string{"reject_once", "reject_always"}
	if d.Approved {
		want = []string{"allow_once", "allow_always"}
	}
	for _, kind := range want {
		for _, o := range p.Options {
			if o.Kind == kind && ctx.Err() == nil {
				return map[string]any{"outcome": map[string]string{"outcome": "selected", "optionId": o.OptionID}}
			}
		}
	}
	return map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}
}

// byMode decides without the daemon when the permission mode says so.
func (t *acpTurn) byMode(kind string) (Decision, bool) {
	switch t.mode {
	case "bypassPermissions":
		return Decision{Approved: true, Reason: "bypassPermissions"}, true
	case "acceptEdits":
		if kind == "edit" {
			return Decision{Approved: true, Reason: "acceptEdits"}, true
		}
	case "plan":
		return planRefuses(t.mode)
	}
	return Decision{}, false
}

func acpToolName(title, kind string) string {
	if title != "" {
		return title
	}
	return kind
}

// acpInput is a tool call's input: its rawInput, or (gemini sends none)
// the whole protocol.EventToolCall, whose title, content and locations say what it does.
func acpInput(rawInput, call json.RawMessage) json.RawMessage {
	switch {
	case len(rawInput) > 0 && string(rawInput) != "null":
		return rawInput
	case len(call) > 0:
		return call
	}
	return json.RawMessage("{}")
}

// acpText is the text of a content block ({"type":"text","text":...}).
func acpText(raw json.RawMessage) string {
	var c struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type != "text" {
		return ""
	}
	return c.Text
}

// acpOutput flattens a tool call's content (text blocks, diffs,
// terminals) to text, falling back to its rawOutput.
func acpOutput(content, rawOutput json.RawMessage) string {
	var items []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
		Path    string          `json:"path"`
	}
	_ = json.Unmarshal(content, &items)
	var b strings.Builder
	for _, it := range items {
		switch it.Type {
		case "content":
			b.WriteString(acpText(it.Content))
		case "diff":
			b.WriteString("diff " + it.Path)
		}
	}
	if b.Len() == 0 && len(rawOutput) > 0 && string(rawOutput) != "null" {
		return string(rawOutput)
	}
	return b.String()
}
