package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/protocol"
)

// ACP drives an agent CLI that speaks the Agent Client Protocol
// (JSON-RPC 2.0, one message a line, over the process's stdin/stdout):
// initialize, session/new (or session/resume / session/load to continue
// req.Resume), one session/prompt; session/update notifications become
// events and session/request_permission requests go to the daemon.
//
// Permission modes are applied here, on the agent's own questions, so the
// daemon's event log shows every decision: bypassPermissions approves
// every question, acceptEdits approves edits (ACP tool kind "edit"),
// plan denies anything that changes the world (edit, delete, move,
// execute) - each without asking, with the mode as the decision's reason;
// everything else is asked of the daemon. The agent must therefore run in
// its own asking mode (Setup's job).
//
// Usage: ACP 1 has no token figures. A PromptResponse "usage" object (an
// unstable ACP extension: inputTokens, outputTokens, cachedReadTokens,
// cachedWriteTokens) or the same under "_meta" is used when an agent sends
// it; gemini-cli puts the turn's input and output tokens in
// "_meta.quota.token_count" (no cache figures).
type ACP struct {
	Key     string // the API key variable, CredentialKey
	Install string // install advice for a missing binary
	// Setup prepares one run (writes the agent's configuration into
	// HOME, adds variables to req.Env) and returns the CLI's arguments.
	Setup func(req *Request) ([]string, error)
}

var _ Adapter = (*ACP)(nil)

// CredentialKey implements Adapter.
func (a *ACP) CredentialKey() string { return a.Key }

// acpExitGrace is how long an agent has to exit after its stdin closes
// (it may still be writing its session to disk) before it is killed.
const acpExitGrace = 3 * time.Second

// Run implements Adapter.
func (a *ACP) Run(ctx context.Context, req Request, host Host) (Result, error) {
	args, err := a.Setup(&req)
	if err != nil {
		return acpFailed(&Error{Code: protocol.TaskAgentCrashed, Message: "prepare agent: " + err.Error()})
	}
	procCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	p, err := Start(procCtx, req, a.Install, args...)
	if err != nil {
		return acpFailed(err)
	}
	c := newACPConn(p, host)
	go c.readLoop()
	stopWatch := context.AfterFunc(ctx, kill) // cancellation kills the group at once
	defer stopWatch()
	res, runErr := c.turn(ctx, req)
	_ = p.CloseInput()
	select {
	case <-c.done:
	case <-time.After(acpExitGrace):
		kill()
		<-c.done
	}
	waitErr := p.Wait()
	if ctx.Err() != nil {
		return Result{Status: "failed", AgentSession: res.AgentSession, MessageCount: res.MessageCount,
			Err: &Error{Code: "cancelled", Message: context.Cause(ctx).Error()}}, ctx.Err()
	}
	if runErr != nil {
		if res.Err == nil {
			res.Err = acpCrashErr(runErr, waitErr, p)
		}
		res.Status = "failed"
		return res, res.Err
	}
	return res, nil
}

func acpFailed(err error) (Result, error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: protocol.TaskAgentCrashed, Message: err.Error()}
	}
	return Result{Status: "failed", Err: e}, e
}

func acpCrashErr(runErr, waitErr error, p *Proc) *Error {
	var e *Error
	if errors.As(runErr, &e) {
		return e
	}
	if errors.As(waitErr, &e) {
		return &Error{Code: protocol.TaskAgentCrashed, Message: runErr.Error() + "; " + e.Message}
	}
	return &Error{Code: protocol.TaskAgentCrashed, Message: runErr.Error() + "; stderr: " + p.Stderr()}
}

// acpMsg is any JSON-RPC message in either direction.
type acpMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *acpRPCError    `json:"error,omitempty"`
}

type acpRPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *acpRPCError) Error() string {
	msg := fmt.Sprintf("%s (%d)", e.Message, e.Code)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		msg += ": " + string(e.Data)
	}
	return msg
}

// acpConn is the client side of one agent's ACP connection: one read
// loop, which also handles the agent's notifications and requests in
// order; writes go through Proc.Send, which is serialised.
type acpConn struct {
	p    *Proc
	host Host
	done chan struct{} // closed when the read loop ends (agent's stdout closed)

	mu      sync.Mutex
	next    int
	pending map[string]chan acpMsg
	closed  error
	active  *acpTurn // the turn whose updates are being reported
}

func newACPConn(p *Proc, host Host) *acpConn {
	return &acpConn{p: p, host: host, done: make(chan struct{}), pending: map[string]chan acpMsg{}}
}

func (c *acpConn) readLoop() {
	defer close(c.done)
	for {
		line, err := c.p.Line()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("agent closed its output")
			}
			c.fail(err)
			return
		}
		var m acpMsg
		if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
			continue // not protocol: a stray log line
		}
		c.dispatch(m, line)
	}
}

func (c *acpConn) dispatch(m acpMsg, line []byte) {
	switch {
	case m.Method != "" && len(m.ID) > 0:
		c.reply(m.ID, c.request(m, line))
	case m.Method != "":
		if t := c.current(); t != nil && m.Method == "session/update" {
			t.update(m.Params, line)
		}
	default:
		c.mu.Lock()
		ch := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// request answers one request from the agent.
func (c *acpConn) request(m acpMsg, line []byte) acpMsg {
	if t := c.current(); t != nil && m.Method == "session/request_permission" {
		res, _ := json.Marshal(t.permission(m.Params, line))
		return acpMsg{Result: res}
	}
	return acpMsg{Error: &acpRPCError{Code: -32601, Message: "method not supported by this client: " + m.Method}}
}

func (c *acpConn) reply(id json.RawMessage, m acpMsg) {
	m.JSONRPC, m.ID = "2.0", id
	line, _ := json.Marshal(m)
	_ = c.p.Send(line)
}

func (c *acpConn) current() *acpTurn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

func (c *acpConn) setTurn(t *acpTurn) {
	c.mu.Lock()
	c.active = t
	c.mu.Unlock()
}

func (c *acpConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = err
	for id, ch := range c.pending {
		ch <- acpMsg{Error: &acpRPCError{Code: -32000, Message: err.Error()}}
		delete(c.pending, id)
	}
}

// call sends a request and waits for its response.
func (c *acpConn) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return c.closed
	}
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan acpMsg, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(acpMsg{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: p})
	if err := c.p.Send(line); err != nil {
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *acpConn) notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(acpMsg{JSONRPC: "2.0", Method: method, Params: p})
	return c.p.Send(line)
}

// ACP messages this client sends and reads.
type (
	acpInitResult struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession         bool `json:"loadSession"`
			SessionCapabilities struct {
				Resume *json.RawMessage `json:"resume"`
			} `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	acpSessionParams struct {
		SessionID  string `json:"sessionId,omitempty"`
		Cwd        string `json:"cwd"`
		MCPServers []any  `json:"mcpServers"`
	}
	acpPromptResult struct {
		StopReason string          `json:"stopReason"`
		Usage      *acpUsage       `json:"usage"`
		Meta       json.RawMessage `json:"_meta"`
	}
	acpUsage struct {
		InputTokens       int64 `json:"inputTokens"`
		OutputTokens      int64 `json:"outputTokens"`
		CachedReadTokens  int64 `json:"cachedReadTokens"`
		CachedWriteTokens int64 `json:"cachedWriteTokens"`
	}
)

// turn runs initialize, the session and one prompt.
func (c *acpConn) turn(ctx context.Context, req Request) (Result, error) {
	var init acpInitResult
	err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]string{"name": "agor", "version": "1"},
	}, &init)
	if err != nil {
		return Result{}, err
	}
	sid, err := c.session(ctx, req, init)
	if err != nil {
		return Result{AgentSession: req.Resume}, err
	}
	t := &acpTurn{host: c.host, ctx: ctx, mode: req.PermissionMode}
	c.setTurn(t)
	var pr acpPromptResult
	err = c.call(ctx, "session/prompt", map[string]any{
		"sessionId": sid,
		"prompt":    []any{map[string]string{"type": "text", "text": req.Prompt}},
	}, &pr)
	if ctx.Err() != nil {
		_ = c.notify("session/cancel", map[string]string{"sessionId": sid})
	}
	t.endMessage()
	c.setTurn(nil)
	return t.result(sid, pr, err)
}

// session starts a new session or continues req.Resume: session/resume
// when the agent offers it (no history replay), else session/load (whose
// history replay is not reported: no turn is set until it is over). An agent
// with neither cannot resume, and the turn fails saying so rather than
// silently starting without the earlier conversation.
func (c *acpConn) session(ctx context.Context, req Request, init acpInitResult) (string, error) {
	params := acpSessionParams{Cwd: req.Cwd, MCPServers: []any{}}
	if req.Resume == "" {
		var out struct {
			SessionID string `json:"sessionId"`
		}
		if err := c.call(ctx, "session/new", params, &out); err != nil {
			return "", err
		}
		return out.SessionID, nil
	}
	params.SessionID = req.Resume
	caps := init.AgentCapabilities
	method := "session/load"
	switch {
	case caps.SessionCapabilities.Resume != nil:
		method = "session/resume"
	case !caps.LoadSession:
		return "", &Error{Code: protocol.TaskAgentCrashed, Message: "this agent cannot resume a session (no loadSession capability); start a new session"}
	}
	if err := c.call(ctx, method, params, nil); err != nil {
		return "", fmt.Errorf("resume agent session %q: %w", req.Resume, err)
	}
	if method == "session/load" {
		c.awaitReplay(ctx)
	}
	return req.Resume, nil
}

// awaitReplay returns once the agent has sent the history that
// session/load replays. ACP has it sent before the load's answer, but
// gemini-cli 0.61 answers first and streams the history after; any answer
// to a further request comes behind that history on the agent's single
// write queue, so one round trip (an extension method the agent may well
// refuse; either answer will do) keeps the replay out of the new turn.
// Bounded, since an agent might not answer an unknown method at all.
func (c *acpConn) awaitReplay(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, acpReplayWait)
	defer cancel()
	_ = c.call(ctx, "_agor/sync", map[string]any{}, nil)
}

// acpReplayWait bounds awaitReplay.
const acpReplayWait = 5 * time.Second

// acpTurn normalises one prompt's updates and permission questions.
type acpTurn struct {
	host Host
	ctx  context.Context
	mode string

	inMessage bool
	messages  int
	usage     Usage
	calls     map[string]bool // tool calls already reported
}

func (t *acpTurn) result(sid string, pr acpPromptResult, err error) (Result, error) {
	res := Result{Status: "completed", MessageCount: t.messages, Usage: t.usage, AgentSession: sid}
	if err != nil {
		res.Status = "failed"
		var rpcErr *acpRPCError
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

func (t *acpTurn) update(params json.RawMessage, raw []byte) {
	var p struct {
		Update json.RawMessage `json:"update"`
	}
	var u acpUpdate
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Update, &u) != nil {
		return
	}
	rawCopy := json.RawMessage(append([]byte(nil), raw...))
	switch u.SessionUpdate {
	case "agent_message_chunk":
		if text := acpText(u.Content); text != "" {
			t.startMessage()
			t.host.Emit(Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": text}, Raw: rawCopy})
		}
	case "agent_thought_chunk":
		if text := acpText(u.Content); text != "" {
			t.host.Emit(Event{Type: protocol.EventThinkingDelta, Data: map[string]any{"text": text}, Raw: rawCopy})
		}
	case "tool_call":
		t.toolCall(u, p.Update, rawCopy)
	case "tool_call_update":
		if u.Status == "completed" || u.Status == "failed" {
			t.toolCall(u, p.Update, rawCopy) // when no tool_call came first
			t.host.Emit(Event{Type: protocol.EventToolResult, Data: map[string]any{
				"tool_use_id": u.ToolCallID, "output": acpOutput(u.Content, u.RawOutput), "is_error": u.Status == "failed",
			}, Raw: rawCopy})
		}
	}
}

// toolCall reports a tool call once, however it first shows up (gemini
// announces a call needing permission only in the permission request).
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
// and returns the RequestPermissionResponse.
func (t *acpTurn) permission(params json.RawMessage, raw []byte) any {
	var p acpPermission
	var call acpUpdate
	_ = json.Unmarshal(params, &p)
	_ = json.Unmarshal(p.ToolCall, &call)
	rawCopy := json.RawMessage(append([]byte(nil), raw...))
	t.toolCall(call, p.ToolCall, rawCopy)
	name, input := acpToolName(call.Title, call.Kind), acpInput(call.RawInput, p.ToolCall)
	t.host.Emit(Event{Type: protocol.EventPermissionAsked, Data: map[string]any{"tool_name": name, "tool_input": input, "kind": call.Kind},
		Raw: rawCopy})
	d, asked := t.byMode(call.Kind)
	if !asked {
		d = t.host.Ask(t.ctx, name, input)
	}
	t.host.Emit(Event{Type: protocol.EventPermissionDecided, Data: map[string]any{"tool_name": name, "approved": d.Approved, "reason": d.Reason}})
	want := []string{"reject_once", "reject_always"}
	if d.Approved {
		want = []string{"allow_once", "allow_always"}
	}
	for _, kind := range want {
		for _, o := range p.Options {
			if o.Kind == kind && t.ctx.Err() == nil {
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
		switch kind {
		case "edit", "delete", "move", "execute":
			return Decision{Approved: false, Reason: "plan mode changes nothing"}, true
		}
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

// acpGetenv is key's value in env ("" when absent).
func acpGetenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// acpSetenv sets key=value in env, replacing an earlier value.
func acpSetenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// acpWriteFile writes data to path atomically (a temporary file renamed
// into place), creating its directory; the file is the user's own (0600).
func acpWriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".agor-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// acpHome is the agent's HOME from its environment.
func acpHome(req *Request) (string, error) {
	home := acpGetenv(req.Env, "HOME")
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("no absolute HOME in the agent's environment (%q)", home)
	}
	return home, nil
}
