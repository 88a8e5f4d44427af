package agent

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// emit reports one event; the caller holds mu.
func (t *codexTurn) emit(typ string, data map[string]any, raw []byte) {
	t.host.Emit(Event{Type: typ, Data: data, Raw: raw})
}

// codexItem is the part of a ThreadItem this adapter reads.
type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Status           string          `json:"status"`
	Changes          json.RawMessage `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
}

// codexParams is the union of the notification params this adapter reads.
type codexParams struct {
	ThreadID   string          `json:"threadId"`
	TurnID     string          `json:"turnId"`
	ItemID     string          `json:"itemId"`
	Delta      string          `json:"delta"`
	Item       codexItem       `json:"item"`
	Turn       codexTurnInfo   `json:"turn"`
	TokenUsage codexTokenUsage `json:"tokenUsage"`
	Error      codexTurnError  `json:"error"`
	WillRetry  bool            `json:"willRetry"`
}

type codexTurnInfo struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Error  *codexTurnError `json:"error"`
}

type codexTurnError struct {
	Message           string          `json:"message"`
	AdditionalDetails string          `json:"additionalDetails"`
	Info              json.RawMessage `json:"codexErrorInfo"` // "internalServerError", {...}
}

// String is the message with its details and codex's classification.
func (e codexTurnError) String() string {
	msg := e.Message
	if e.AdditionalDetails != "" {
		msg += ": " + e.AdditionalDetails
	}
	if len(e.Info) > 0 && string(e.Info) != "null" {
		msg += " (" + strings.Trim(string(e.Info), `"`) + ")"
	}
	return msg
}

type codexTokens struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
}

type codexTokenUsage struct {
	Last  codexTokens `json:"last"`
	Total codexTokens `json:"total"`
}

// notification maps one notification onto events.
func (t *codexTurn) notification(method string, params json.RawMessage, raw []byte) {
	var p codexParams
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.ThreadID != "" && t.threadID != "" && p.ThreadID != t.threadID {
		return // another thread (a sub-agent's): not this turn's output
	}
	switch method {
	case "turn/started":
		if t.turnID == "" {
			t.turnID = p.Turn.ID
		}
	case "item/agentMessage/delta":
		t.deltas[p.ItemID] = true
		t.emit(protocol.EventTextDelta, map[string]any{"text": p.Delta}, raw)
	case "item/reasoning/textDelta", "item/reasoning/summaryTextDelta":
		t.emit(protocol.EventThinkingDelta, map[string]any{"text": p.Delta}, raw)
	case "item/started":
		t.itemStarted(p.Item, raw)
	case "item/completed":
		t.itemCompleted(p.Item, raw)
	case "thread/tokenUsage/updated":
		t.tokens(p)
	case "error":
		if !p.WillRetry {
			t.emit(protocol.EventError, map[string]any{"code": protocol.TaskModelAPI, "message": p.Error.String()}, raw)
		}
	case "turn/completed":
		t.completed(p.Turn)
	}
}

// tokens adds one model response's usage (last) to the turn's.
func (t *codexTurn) tokens(p codexParams) {
	if t.turnID == "" || (p.TurnID != "" && p.TurnID != t.turnID) {
		return // thread/resume replays the thread's earlier usage
	}
	u := p.TokenUsage.Last
	t.res.Usage.InputTokens += u.InputTokens
	t.res.Usage.CacheReadTokens += u.CachedInputTokens
	t.res.Usage.CacheWriteTokens += u.CacheWriteInputTokens
	t.res.Usage.OutputTokens += u.OutputTokens
	t.usageSet = true
}

// toolName is the normalised tool name of a tool-like item, "" if the
// item is not a tool call.
func codexToolName(it codexItem) string {
	switch it.Type {
	case "commandExecution":
		return "exec_command"
	case "fileChange":
		return "file_change"
	case "mcpToolCall":
		return it.Server + "/" + it.Tool
	case "dynamicToolCall":
		return it.Tool
	case "webSearch", "imageView":
		return it.Type
	}
	return ""
}

func codexToolInput(it codexItem) map[string]any {
	switch it.Type {
	case "commandExecution":
		return map[string]any{"command": it.Command, "cwd": it.Cwd}
	case "fileChange":
		return map[string]any{"changes": it.Changes}
	case "mcpToolCall", "dynamicToolCall":
		return map[string]any{"arguments": it.Arguments}
	}
	return map[string]any{}
}

func (t *codexTurn) itemStarted(it codexItem, raw []byte) {
	switch name := codexToolName(it); {
	case it.Type == "agentMessage":
		t.res.MessageCount++
		t.emit(protocol.EventMessageStart, map[string]any{"role": "assistant"}, raw)
	case name != "" && !t.started[it.ID]:
		t.started[it.ID] = true
		t.res.MessageCount++
		if it.Type == "fileChange" {
			if t.changes == nil {
				t.changes = map[string]json.RawMessage{}
			}
			t.changes[it.ID] = it.Changes
		}
		t.emit(protocol.EventToolCall, map[string]any{"tool_use_id": it.ID, "tool_name": name, "tool_input": codexToolInput(it)}, raw)
	}
}

func (t *codexTurn) itemCompleted(it codexItem, raw []byte) {
	if it.Type == "agentMessage" {
		if !t.deltas[it.ID] && it.Text != "" {
			t.emit(protocol.EventTextDelta, map[string]any{"text": it.Text}, raw)
		}
		t.emit(protocol.EventMessageStop, map[string]any{"role": "assistant"}, raw)
		return
	}
	if codexToolName(it) == "" {
		return
	}
	t.itemStarted(it, raw) // a tool call that never reported its start
	data := map[string]any{"tool_use_id": it.ID, "is_error": it.Status != "completed"}
	switch it.Type {
	case "commandExecution":
		data["output"] = ""
		if it.AggregatedOutput != nil {
			data["output"] = *it.AggregatedOutput
		}
		if it.ExitCode != nil {
			data["exit_code"] = *it.ExitCode
			data["is_error"] = it.Status != "completed" || *it.ExitCode != 0
		}
	case "fileChange":
		data["output"] = it.Changes
	case "mcpToolCall", "dynamicToolCall":
		data["output"] = it.Result
		if len(it.Error) > 0 && string(it.Error) != "null" {
			data["error"] = it.Error
			data["is_error"] = true
		}
	}
	data["status"] = it.Status
	t.emit(protocol.EventToolResult, data, raw)
}

// completed settles the Result from turn/completed.
func (t *codexTurn) completed(turn codexTurnInfo) {
	if t.done || t.turnID != "" && turn.ID != "" && turn.ID != t.turnID {
		return
	}
	t.done = true
	close(t.finished)
	if t.usageSet {
		t.emit(protocol.EventUsage, map[string]any{
			"input_tokens": t.res.Usage.InputTokens, "output_tokens": t.res.Usage.OutputTokens,
			"cache_read_tokens": t.res.Usage.CacheReadTokens, "cache_write_tokens": t.res.Usage.CacheWriteTokens,
		}, nil)
	}
	switch turn.Status {
	case "completed":
		t.res.Status = "completed"
	case "interrupted":
		t.res.Status = "failed"
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "codex turn interrupted"}
	default:
		t.res.Status = "failed"
		msg := "codex turn " + turn.Status
		if turn.Error != nil {
			msg = turn.Error.String()
		}
		t.res.Err = &Error{Code: protocol.TaskModelAPI, Message: string(t.redact([]byte(msg)))}
	}
}

// codexApproval is the params of the approval requests.
type codexApproval struct {
	ItemID    string `json:"itemId"`
	Command   string `json:"command"`
	Cwd       string `json:"cwd"`
	Reason    string `json:"reason"`
	GrantRoot string `json:"grantRoot"`
}

// serverRequest answers a request from codex, on a goroutine of its own:
// approvals go to the host; anything else is refused as unsupported. ctx
// ends with the turn or the connection.
func (t *codexTurn) serverRequest(ctx context.Context, r *rpc.Request) (any, error) {
	var a codexApproval
	_ = json.Unmarshal(r.Params, &a)
	var tool string
	var input map[string]any
	switch r.Method {
	case "item/commandExecution/requestApproval":
		tool, input = "exec_command", map[string]any{"command": a.Command, "cwd": a.Cwd}
	case "item/fileChange/requestApproval":
		t.mu.Lock()
		tool, input = "file_change", map[string]any{"changes": t.changes[a.ItemID]}
		t.mu.Unlock()
		if a.GrantRoot != "" {
			input["grant_root"] = a.GrantRoot
		}
	default:
		return nil, &rpc.Error{Code: rpc.CodeMethodNotFound, Message: "agor does not support " + r.Method}
	}
	input["tool_use_id"] = a.ItemID
	if a.Reason != "" {
		input["reason"] = a.Reason
	}
	d := t.decide(ctx, tool, input, r.Raw)
	decision := "decline"
	switch {
	case ctx.Err() != nil:
		decision = "cancel"
	case d.Approved:
		decision = "accept"
	}
	return map[string]any{"decision": decision}, nil
}

// decide asks the host, except for file changes under acceptEdits. mu is
// not held while the host decides, so codex's notifications meanwhile
// are still reported.
func (t *codexTurn) decide(ctx context.Context, tool string, input map[string]any, raw []byte) Decision {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tool == "file_change" && t.req.PermissionMode == "acceptEdits" {
		d := Decision{Approved: true, Reason: "acceptEdits"}
		t.emit(protocol.EventPermissionDecided, map[string]any{"tool_name": tool, "approved": true, "reason": d.Reason}, raw)
		return d
	}
	in, _ := json.Marshal(input)
	t.emit(protocol.EventPermissionAsked, map[string]any{"tool_name": tool, "tool_input": input}, raw)
	d, decided := planRefuses(t.req.PermissionMode)
	if !decided {
		t.mu.Unlock()
		d = t.host.Ask(ctx, tool, in)
		t.mu.Lock()
	}
	t.emit(protocol.EventPermissionDecided, map[string]any{"tool_name": tool, "approved": d.Approved, "reason": d.Reason}, nil)
	return d
}
