package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// Claude drives Claude Code through the Agent SDK's stream-json control
// protocol: one user turn on stdin, permission questions answered as
// control_responses, output lines normalised to events.
type Claude struct{}

var _ Opener = Claude{}

func init() { Register("claude-code", Claude{}) }

const claudeInstall = "npm install -g @anthropic-ai/claude-code"

// CredentialKey is the variable Claude Code reads its key from.
func (Claude) CredentialKey() string { return "ANTHROPIC_API_KEY" }

// claudeModes are our permission modes; Claude Code uses the same names.
var claudeModes = map[string]string{
	"":                  "default",
	"default":           "default",
	"acceptEdits":       "acceptEdits",
	"bypassPermissions": "bypassPermissions",
	"plan":              "plan",
}

// claudeArgs is the command line for one long-lived stream-json run.
func claudeArgs(req Request) ([]string, error) {
	mode, ok := claudeModes[req.PermissionMode]
	if !ok {
		return nil, fmt.Errorf("claude-code: unknown permission mode %q", req.PermissionMode)
	}
	args := []string{
		"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", mode,
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--resume", req.Resume)
	}
	return args, nil
}

// claudeEnv is req.Env with the variables this adapter always wants.
func claudeEnv(env []string) []string {
	out := append([]string(nil), env...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=") {
			return out
		}
	}
	return append(out, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
}

// Run runs one turn (Open, without keeping the process). A failure to
// start is returned as the *Error too; a turn that ran and failed is a
// failed Result with a nil error; when ctx ends first the Result is
// failed and the error is ctx's.
func (c Claude) Run(ctx context.Context, req Request, host Host) (Result, error) {
	return runOnce(ctx, c, req, host)
}

// Open runs one turn and keeps Claude Code for more: stream-json input
// takes any number of user messages on one process, each answered by
// its own result line.
func (c Claude) Open(ctx context.Context, req Request, host Host) (Result, Live, error) {
	l, res, err := c.start(ctx, req)
	if l == nil {
		return res, nil, err
	}
	res, err = l.Turn(ctx, req, host)
	if !l.Usable() {
		return res, nil, err
	}
	return res, l, err
}

// Prepare starts Claude Code and sends initialize, without waiting for
// its answer: Claude Code answers it late, after it would have handled
// a user message sent at once, so the first Turn writes the message
// without waiting either (and its reading skips the answer).
func (c Claude) Prepare(ctx context.Context, req Request) (Live, error) {
	l, _, err := c.start(ctx, req)
	if l == nil {
		return nil, err
	}
	t := &claudeTurn{p: l.p}
	if err := t.send(claudeInitialize); err != nil {
		l.Close()
		return nil, fmt.Errorf("claude-code: initialize: %w", err)
	}
	l.prepared = true
	return l, nil
}

// start starts Claude Code for req; the process outlives ctx (a stopped
// turn is interrupted). No process: the Result and error say why.
func (c Claude) start(ctx context.Context, req Request) (*claudeLive, Result, error) {
	args, err := claudeArgs(req)
	if err != nil {
		return nil, Result{}, err
	}
	req.Env = claudeEnv(req.Env)
	pctx, kill := context.WithCancel(context.WithoutCancel(ctx))
	p, err := Start(pctx, req, claudeInstall, args...)
	if err != nil {
		kill()
		var e *Error
		if errors.As(err, &e) {
			return nil, Result{Status: "failed", Err: e}, err
		}
		return nil, Result{}, fmt.Errorf("claude-code: %w", err)
	}
	mode := claudeModes[req.PermissionMode]
	return &claudeLive{p: p, kill: kill, redact: claudeRedactor(req.Env, c.CredentialKey()), mode: mode,
		bypass: mode == "bypassPermissions", model: req.Model}, Result{}, nil
}

// claudeInitialize is the Agent SDK's first control request.
var claudeInitialize = map[string]any{"type": "control_request", "request_id": "init-1", "request": map[string]any{"subtype": "initialize"}}

// claudeTurn is the state of one turn.
type claudeTurn struct {
	ctx    context.Context
	p      *Proc
	host   Host
	redact func([]byte) []byte
	init   bool   // send initialize first (the process's first turn)
	mode   string // the turn's permission mode
	// resume is the session the process was started to continue (its
	// first turn only); began says Claude Code's init line came, which it
	// sends once the session is loaded.
	resume string
	began  bool
	res    Result
	done   bool // the result line came
}

// run sends the turn and reads until its result line; anything else ends
// the process (finish).
func (t *claudeTurn) run(prompt string) Result {
	// EPIPE: the agent stopped reading before it had the turn (it is
	// exiting); what it wrote, and how it exited, say why, so read on.
	if err := t.start(prompt); err != nil && !errors.Is(err, syscall.EPIPE) {
		return t.finish(err)
	}
	for !t.done {
		line, err := t.p.Line()
		if err != nil {
			return t.finish(err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := t.handle(t.redact(bytes.Clone(line))); err != nil {
			return t.finish(err)
		}
	}
	return t.res
}

// start sends initialize (on the first turn) and the user turn.
func (t *claudeTurn) start(prompt string) error {
	msgs := []any{map[string]any{
		"type": "user", "session_id": "", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}},
	}}
	if t.init {
		msgs = append([]any{claudeInitialize}, msgs...)
	}
	for _, m := range msgs {
		if err := t.send(m); err != nil {
			return err
		}
	}
	return nil
}

func (t *claudeTurn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.p.Send(b)
}

// finish ends the process and settles the Result. cause is why reading
// stopped early (nil after the result line).
func (t *claudeTurn) finish(cause error) Result {
	if cause != nil && !errors.Is(cause, io.EOF) && t.ctx.Err() == nil {
		// The protocol broke (a bad or oversized line, a failed write):
		// the agent will not finish on its own.
		_ = syscall.Kill(-t.p.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = t.p.CloseInput()
	for { // drain, so Wait does not race our reads
		if _, err := t.p.Line(); err != nil {
			break
		}
	}
	waitErr := t.p.Wait()
	if t.done {
		return t.res
	}
	t.res.Status = "failed"
	switch {
	case t.ctx.Err() != nil:
		code := protocol.TaskAgentCrashed
		if errors.Is(t.ctx.Err(), context.DeadlineExceeded) {
			code = protocol.TaskTimeout
		}
		t.res.Err = &Error{Code: code, Message: "claude-code stopped: " + t.ctx.Err().Error()}
	case cause != nil && !errors.Is(cause, io.EOF):
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("claude-code: %v; stderr: %s", cause, t.redact([]byte(t.p.Stderr())))}
	default:
		msg := "exited without a result"
		var we *Error
		if errors.As(waitErr, &we) {
			msg = "exited without a result: " + we.Message
		} else if waitErr != nil {
			msg = fmt.Sprintf("exited without a result: %v", waitErr)
		} else if s := t.p.Stderr(); s != "" {
			msg += ": " + s
		}
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "claude-code " + string(t.redact([]byte(msg)))}
	}
	return t.res
}

// claudeLine is the union of the output lines this adapter reads.
type claudeLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Message   json.RawMessage `json:"message"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	// result
	IsError bool            `json:"is_error"`
	Result  string          `json:"result"`
	Errors  []string        `json:"errors"`
	Usage   json.RawMessage `json:"usage"`
	// api_error_status is set on a result that failed at the model API.
	APIErrorStatus json.RawMessage `json:"api_error_status"`
}

func (t *claudeTurn) handle(raw []byte) error {
	var l claudeLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("bad output line: %w", err)
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			t.began = true
		}
		if l.Subtype == "init" && l.SessionID != "" {
			t.res.AgentSession = l.SessionID
		}
	case "assistant":
		t.res.MessageCount++
		t.assistant(l.Message, raw)
	case "user":
		t.user(l.Message, raw)
	case "control_request":
		return t.control(l, raw)
	case "result":
		t.result(l, raw)
	}
	return nil
}

type claudeMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func claudeBlocks(msg json.RawMessage) (string, []claudeBlock) {
	var m claudeMessage
	if json.Unmarshal(msg, &m) != nil {
		return "", nil
	}
	var blocks []claudeBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []claudeBlock{{Type: "text", Text: s}}
		}
	}
	return m.Role, blocks
}

func (t *claudeTurn) emit(typ string, data map[string]any, raw []byte) {
	t.host.Emit(Event{Type: typ, Data: data, Raw: raw})
}

func (t *claudeTurn) assistant(msg json.RawMessage, raw []byte) {
	_, blocks := claudeBlocks(msg)
	t.emit(protocol.EventMessageStart, map[string]any{"role": "assistant"}, raw)
	for _, b := range blocks {
		switch b.Type {
		case "text":
			t.emit(protocol.EventTextDelta, map[string]any{"text": b.Text}, raw)
		case "thinking":
			t.emit(protocol.EventThinkingDelta, map[string]any{"text": b.Thinking}, raw)
		case "tool_use":
			t.emit(protocol.EventToolCall, map[string]any{"tool_use_id": b.ID, "tool_name": b.Name, "tool_input": b.Input}, raw)
		}
	}
	t.emit(protocol.EventMessageStop, map[string]any{"role": "assistant"}, raw)
}

func (t *claudeTurn) user(msg json.RawMessage, raw []byte) {
	_, blocks := claudeBlocks(msg)
	for _, b := range blocks {
		if b.Type == "tool_result" {
			t.emit(protocol.EventToolResult, map[string]any{"tool_use_id": b.ToolUseID, "output": claudeText(b.Content), "is_error": b.IsError}, raw)
		}
	}
}

// claudeText flattens a tool_result's content (a string or text blocks).
func claudeText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(content, &blocks) != nil {
		return string(content)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type claudeUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_input_tokens"`
	CacheWriteTokens int64 `json:"cache_creation_input_tokens"`
}

func (t *claudeTurn) result(l claudeLine, raw []byte) {
	t.done = true
	if l.SessionID != "" {
		t.res.AgentSession = l.SessionID
	}
	var u claudeUsage
	if len(l.Usage) > 0 {
		_ = json.Unmarshal(l.Usage, &u)
	}
	t.res.Usage = Usage(u)
	t.emit(protocol.EventUsage, map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens,
	}, raw)
	if !l.IsError && !strings.HasPrefix(l.Subtype, "error") {
		t.res.Status = "completed"
		return
	}
	t.res.Status = "failed"
	t.res.Err = claudeResultError(l)
	if t.resume != "" && !t.began { // "No conversation found with session ID: ..."
		t.res.Err = resumeFailed(t.resume, t.res.Err.Message)
	}
	t.emit(protocol.EventError, map[string]any{"code": t.res.Err.Code, "message": t.res.Err.Message}, raw)
}

// claudeResultError classifies a failed result: an error from the model
// API, or the agent's own failure (max turns, execution error).
func claudeResultError(l claudeLine) *Error {
	msg := l.Result
	if msg == "" {
		msg = strings.Join(l.Errors, "; ")
	}
	if msg == "" {
		msg = "claude-code result " + l.Subtype
	}
	apiStatus := len(l.APIErrorStatus) > 0 && string(l.APIErrorStatus) != "null"
	if apiStatus || strings.Contains(msg, "API Error") {
		return &Error{Code: protocol.TaskModelAPI, Message: msg}
	}
	return &Error{Code: protocol.TaskAgentCrashed, Message: msg}
}

type claudeToolRequest struct {
	Subtype   string          `json:"subtype"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// control answers the agent's control_requests: can_use_tool goes to
// the host; anything else is refused.
func (t *claudeTurn) control(l claudeLine, raw []byte) error {
	var r claudeToolRequest
	_ = json.Unmarshal(l.Request, &r)
	if r.Subtype != "can_use_tool" {
		return t.send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": l.RequestID, "error": "unsupported control request " + r.Subtype,
		}})
	}
	input := r.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	t.emit(protocol.EventPermissionAsked, map[string]any{"tool_name": r.ToolName, "tool_input": input, "tool_use_id": r.ToolUseID}, raw)
	d, decided := planRefuses(t.mode)
	if !decided {
		d = t.host.Ask(t.ctx, r.ToolName, input)
	}
	t.emit(protocol.EventPermissionDecided, map[string]any{"tool_name": r.ToolName, "approved": d.Approved, "reason": d.Reason}, raw)
	answer := map[string]any{"behavior": "allow", "updatedInput": input}
	if !d.Approved {
		reason := d.Reason
		if reason == "" {
			reason = "The user denied permission to use " + r.ToolName + "."
		}
		answer = map[string]any{"behavior": "deny", "message": reason}
	}
	return t.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": l.RequestID, "response": answer,
	}})
}

// claudeRedactor removes the API key's value from text we pass on.
func claudeRedactor(env []string, key string) func([]byte) []byte {
	var secret []byte
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok && len(v) >= 8 {
			secret = []byte(v)
		}
	}
	return func(b []byte) []byte {
		if secret == nil || !bytes.Contains(b, secret) {
			return b
		}
		return bytes.ReplaceAll(b, secret, []byte("[REDACTED]"))
	}
}
