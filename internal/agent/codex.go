package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/protocol"
)

func init() { Register("codex", Codex{}) }

// Codex drives OpenAI's Codex CLI through `codex app-server`, its
// JSON-RPC protocol over stdio: one thread per agor session (the thread
// id is Result.AgentSession; Resume continues it with thread/resume), one
// turn per Run, command and file-change approvals answered through
// Host.Ask.
//
// Permission modes map onto Codex's approval policy and sandbox:
//
//	default           approvalPolicy "untrusted", sandbox "workspace-write":
//	                  anything but Codex's known-safe read-only commands
//	                  asks; file edits ask.
//	acceptEdits       as default, but file-change approvals are accepted
//	                  without asking (commands still ask).
//	bypassPermissions approvalPolicy "never", sandbox "danger-full-access":
//	                  the user chose no checks, and the executor already
//	                  runs as the user's own Unix account, which is the
//	                  boundary agor relies on; workspace-write would also
//	                  cut the network and writes outside cwd, which
//	                  bypassPermissions promises not to do.
//	plan              approvalPolicy "never", sandbox "read-only": the
//	                  model may look but not change anything, and is not
//	                  offered a way to ask for more.
type Codex struct{}

var _ Adapter = Codex{}

// CodexBaseURLEnv, when set in the agent's environment, is the base URL
// (ending in /v1) of the Responses API Codex is configured to call.
const CodexBaseURLEnv = "AGOR_CODEX_BASE_URL"

// CodexDefaultModel is written to a new config.toml: a slug Codex 0.169
// knows, so it does not fall back to guessed model metadata.
const CodexDefaultModel = "gpt-5.5"

const (
	codexInstall  = "npm install -g @openai/codex"
	codexProvider = "agor"
	codexExitWait = 5 * time.Second // after stdin closes, before the kill
)

// CredentialKey is the variable the configured provider reads its key from.
func (Codex) CredentialKey() string { return "OPENAI_API_KEY" }

// Run runs one turn. A failure to start is returned as the *Error too; a
// turn that ran and failed is a failed Result with a nil error; when ctx
// ends first the Result is failed and the error is ctx's.
func (c Codex) Run(ctx context.Context, req Request, host Host) (Result, error) {
	policy, sandbox, err := codexMode(req.PermissionMode)
	if err != nil {
		return Result{Status: "failed", Err: &Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}}, err
	}
	if _, err := os.Stat(req.Binary); err == nil { // missing binary: Start says so
		if err := codexConfigure(req.Env, c.CredentialKey()); err != nil {
			return Result{}, fmt.Errorf("codex: %w", err)
		}
	}
	pctx, kill := context.WithCancel(ctx)
	defer kill()
	p, err := Start(pctx, req, codexInstall, "app-server")
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Result{Status: "failed", Err: e}, err
		}
		return Result{}, fmt.Errorf("codex: %w", err)
	}
	t := &codexTurn{
		ctx: ctx, p: p, host: host, req: req, policy: policy, sandbox: sandbox,
		redact: codexRedactor(req.Env, c.CredentialKey()), started: map[string]bool{}, deltas: map[string]bool{},
	}
	res := t.run(kill)
	if res.Status == "completed" {
		return res, nil
	}
	return res, ctx.Err()
}

// codexMode maps a permission mode onto an approval policy and a sandbox.
func codexMode(mode string) (policy, sandbox string, err error) {
	switch mode {
	case "", "default", "acceptEdits":
		return "untrusted", "workspace-write", nil
	case "bypassPermissions":
		return "never", "danger-full-access", nil
	case "plan":
		return "never", "read-only", nil
	}
	return "", "", fmt.Errorf("codex: unknown permission mode %q", mode)
}

// codexHome is CODEX_HOME from env, else HOME/.codex.
func codexHome(env []string) string {
	if h := envValue(env, "CODEX_HOME"); h != "" {
		return h
	}
	if h := envValue(env, "HOME"); h != "" {
		return filepath.Join(h, ".codex")
	}
	return ""
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// codexConfigure writes $CODEX_HOME/config.toml unless one exists: a
// provider reading its key from keyVar, at CodexBaseURLEnv's URL (else
// OpenAI's), with retries, analytics and plugins off. An existing file is
// the user's and is left alone.
func codexConfigure(env []string, keyVar string) error {
	home := codexHome(env)
	if home == "" {
		return errors.New("neither CODEX_HOME nor HOME is set")
	}
	path := filepath.Join(home, "config.toml")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("codex home: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil // a concurrent turn wrote it
	}
	if err != nil {
		return fmt.Errorf("codex config: %w", err)
	}
	_, err = f.WriteString(codexConfig(envValue(env, CodexBaseURLEnv), keyVar))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("codex config: %w", err)
	}
	return nil
}

func codexConfig(baseURL, keyVar string) string {
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1"
	}
	return fmt.Sprintf(`# Written by agor for the codex agent; edit freely, agor will not overwrite it.
model = %q
model_provider = %q

[model_providers.%s]
name = "agor"
base_url = %q
env_key = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false
`, CodexDefaultModel, codexProvider, codexProvider, baseURL, keyVar)
}

// codexRedactor removes the API key's value from text we pass on.
func codexRedactor(env []string, key string) func([]byte) []byte {
	secret := []byte(envValue(env, key))
	return func(b []byte) []byte {
		if len(secret) < 8 || !bytes.Contains(b, secret) {
			return b
		}
		return bytes.ReplaceAll(b, secret, []byte("[REDACTED]"))
	}
}

// codexTrace, when set (by tests), sees every line codex writes.
var codexTrace func(task string, line []byte)

// codexTurn is the state of one Run.
type codexTurn struct {
	ctx             context.Context
	p               *Proc
	host            Host
	req             Request
	policy, sandbox string
	redact          func([]byte) []byte

	nextID   int64
	threadID string
	turnID   string
	res      Result
	done     bool            // turn/completed came
	started  map[string]bool // items whose tool_call was emitted
	deltas   map[string]bool // agent messages that streamed deltas
	changes  map[string]json.RawMessage
	usageSet bool
}

// codexMsg is any JSON-RPC message: request, notification or response.
type codexMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (t *codexTurn) run(kill context.CancelFunc) Result {
	err := t.start()
	for err == nil && !t.done {
		var m codexMsg
		var raw []byte
		if m, raw, err = t.read(); err == nil {
			err = t.handle(m, raw)
		}
	}
	return t.finish(err, kill)
}

// start initialises the connection, starts or resumes the thread and
// starts the turn.
func (t *codexTurn) start() error {
	if _, err := t.call("initialize", map[string]any{
		"clientInfo": map[string]any{"name": "agor", "title": "agor", "version": "1"},
	}); err != nil {
		return err
	}
	if err := t.send(map[string]any{"method": "initialized"}); err != nil {
		return err
	}
	thread := map[string]any{"cwd": t.req.Cwd, "approvalPolicy": t.policy, "sandbox": t.sandbox}
	if t.req.Model != "" {
		thread["model"] = t.req.Model
	}
	method := "thread/start"
	if t.req.Resume != "" {
		method, thread["threadId"] = "thread/resume", t.req.Resume
	}
	res, err := t.call(method, thread)
	if err != nil {
		return err
	}
	var th struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &th); err != nil || th.Thread.ID == "" {
		return fmt.Errorf("%s: no thread id in %s", method, res)
	}
	t.threadID, t.res.AgentSession = th.Thread.ID, th.Thread.ID
	res, err = t.call("turn/start", map[string]any{
		"threadId": t.threadID,
		"input":    []any{map[string]any{"type": "text", "text": t.req.Prompt}},
	})
	if err != nil {
		return err
	}
	var turn struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(res, &turn)
	if t.turnID == "" {
		t.turnID = turn.Turn.ID
	}
	return nil
}

// codexRPCError is an error response to one of our calls.
type codexRPCError struct {
	method  string
	code    int
	message string
}

func (e *codexRPCError) Error() string {
	return fmt.Sprintf("%s: error %d: %s", e.method, e.code, e.message)
}

// call sends a request and handles what arrives until its response.
func (t *codexTurn) call(method string, params any) (json.RawMessage, error) {
	t.nextID++
	id := strconv.FormatInt(t.nextID, 10)
	if err := t.send(map[string]any{"id": t.nextID, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		m, raw, err := t.read()
		if err != nil {
			return nil, err
		}
		if m.Method == "" && string(m.ID) == id {
			if m.Error != nil {
				return nil, &codexRPCError{method, m.Error.Code, m.Error.Message}
			}
			return m.Result, nil
		}
		if err := t.handle(m, raw); err != nil {
			return nil, err
		}
	}
}

func (t *codexTurn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.p.Send(b)
}

// read returns the next message and its line (copied, key redacted).
func (t *codexTurn) read() (codexMsg, []byte, error) {
	for {
		line, err := t.p.Line()
		if err != nil {
			return codexMsg{}, nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		raw := t.redact(bytes.Clone(line))
		if codexTrace != nil {
			codexTrace(t.req.TaskID, raw)
		}
		var m codexMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			return codexMsg{}, nil, fmt.Errorf("codex wrote a line that is not JSON-RPC: %.200s", raw)
		}
		return m, raw, nil
	}
}

// handle dispatches a request from codex or a notification.
func (t *codexTurn) handle(m codexMsg, raw []byte) error {
	switch {
	case m.Method != "" && m.ID != nil:
		return t.serverRequest(m, raw)
	case m.Method != "":
		t.notification(m.Method, m.Params, raw)
	}
	return nil // a stray response
}

// finish ends the process and settles the Result. cause is why reading
// stopped early (nil after turn/completed).
func (t *codexTurn) finish(cause error, kill context.CancelFunc) Result {
	_ = t.p.CloseInput()
	timer := time.AfterFunc(codexExitWait, kill)
	for { // drain, so Wait does not race our reads
		if _, err := t.p.Line(); err != nil {
			break
		}
	}
	waitErr := t.p.Wait()
	timer.Stop()
	if t.done {
		return t.res
	}
	t.res.Status = "failed"
	var rpcErr *codexRPCError
	switch {
	case t.ctx.Err() != nil:
		code := protocol.TaskAgentCrashed
		if errors.Is(t.ctx.Err(), context.DeadlineExceeded) {
			code = protocol.TaskTimeout
		}
		t.res.Err = &Error{Code: code, Message: "codex stopped: " + t.ctx.Err().Error()}
	case errors.As(cause, &rpcErr):
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "codex " + string(t.redact([]byte(rpcErr.Error())))}
	case cause != nil && !errors.Is(cause, io.EOF):
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("codex: %v; stderr: %s", cause, t.redact([]byte(t.p.Stderr())))}
	default:
		msg := "exited before the turn completed"
		if waitErr != nil {
			msg = fmt.Sprintf("%s (%v)", msg, waitErr)
		} else if s := t.p.Stderr(); s != "" {
			msg += ": " + s
		}
		t.res.Err = &Error{Code: protocol.TaskAgentCrashed, Message: "codex " + string(t.redact([]byte(msg)))}
	}
	return t.res
}

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
	if t.turnID != "" && turn.ID != "" && turn.ID != t.turnID {
		return
	}
	t.done = true
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

// serverRequest answers a request from codex: approvals go to the host;
// anything else is refused as unsupported.
func (t *codexTurn) serverRequest(m codexMsg, raw []byte) error {
	var a codexApproval
	_ = json.Unmarshal(m.Params, &a)
	var tool string
	var input map[string]any
	switch m.Method {
	case "item/commandExecution/requestApproval":
		tool, input = "exec_command", map[string]any{"command": a.Command, "cwd": a.Cwd}
	case "item/fileChange/requestApproval":
		tool, input = "file_change", map[string]any{"changes": t.changes[a.ItemID]}
		if a.GrantRoot != "" {
			input["grant_root"] = a.GrantRoot
		}
	default:
		return t.send(map[string]any{"id": m.ID, "error": map[string]any{
			"code": -32601, "message": "agor does not support " + m.Method,
		}})
	}
	input["tool_use_id"] = a.ItemID
	if a.Reason != "" {
		input["reason"] = a.Reason
	}
	d := t.decide(tool, input, raw)
	decision := "decline"
	switch {
	case t.ctx.Err() != nil:
		decision = "cancel"
	case d.Approved:
		decision = "accept"
	}
	return t.send(map[string]any{"id": m.ID, "result": map[string]any{"decision": decision}})
}

// decide asks the host, except for file changes under acceptEdits.
func (t *codexTurn) decide(tool string, input map[string]any, raw []byte) Decision {
	if tool == "file_change" && t.req.PermissionMode == "acceptEdits" {
		d := Decision{Approved: true, Reason: "acceptEdits"}
		t.emit(protocol.EventPermissionDecided, map[string]any{"tool_name": tool, "approved": true, "reason": d.Reason}, raw)
		return d
	}
	in, _ := json.Marshal(input)
	t.emit(protocol.EventPermissionAsked, map[string]any{"tool_name": tool, "tool_input": input}, raw)
	d := t.host.Ask(t.ctx, tool, in)
	t.emit(protocol.EventPermissionDecided, map[string]any{"tool_name": tool, "approved": d.Approved, "reason": d.Reason}, nil)
	return d
}
