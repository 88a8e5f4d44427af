package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

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

// open runs initialize and starts or continues the session.
func (c *acpClient) open(ctx context.Context, req Request) (string, error) {
	var init acpInitResult
	err := call(ctx, c.conn, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]string{"name": "agor", "version": "1"},
	}, &init)
	if err != nil {
		return "", err
	}
	return c.session(ctx, req, init)
}

// prompt runs one session/prompt, its updates and questions going to
// host. The call outlasts ctx (the caller cancels the turn through the
// protocol); the turn's permission questions do not.
func (c *acpClient) prompt(ctx context.Context, sid string, req Request, host Host) (Result, error) {
	t := &acpTurn{ctx: ctx, host: host, mode: req.PermissionMode}
	if c.toolOutput != nil {
		t.toolOutput = func(id string) string { return c.toolOutput(ctx, sid, id) }
	}
	c.setTurn(t)
	var pr acpPromptResult
	err := call(context.WithoutCancel(ctx), c.conn, "session/prompt", map[string]any{
		"sessionId": sid,
		"prompt":    []any{map[string]string{"type": "text", "text": req.Prompt}},
	}, &pr)
	c.setTurn(nil)
	return t.result(sid, pr, err)
}

// session starts a new session or continues req.Resume: session/resume
// when the agent offers it (no history replay), else session/load (whose
// history replay is not reported: no turn is set until it is over). An agent
// with neither cannot resume, and one that answers it has no such session
// (gemini: "No previous sessions found for this project."), fails the turn
// saying so (resumeFailed) rather than silently starting without the
// earlier conversation.
func (c *acpClient) session(ctx context.Context, req Request, init acpInitResult) (string, error) {
	params := acpSessionParams{Cwd: req.Cwd, MCPServers: []any{}}
	if req.Resume == "" {
		var out struct {
			SessionID string `json:"sessionId"`
		}
		if err := call(ctx, c.conn, "session/new", params, &out); err != nil {
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
		return "", resumeFailed(req.Resume, "this agent cannot resume a session (no loadSession capability); start a new session")
	}
	if err := call(ctx, c.conn, method, params, nil); err != nil {
		var refused *callError
		if errors.As(err, &refused) { // the agent's answer: no such session here
			return "", resumeFailed(req.Resume, refused.said())
		}
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
// write queue (and the connection hands a response over only after the
// notifications read before it), so one round trip (an extension method
// the agent may well refuse; either answer will do) keeps the replay out
// of the new turn. Bounded, since an agent might not answer an unknown
// method at all.
func (c *acpClient) awaitReplay(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, acpReplayWait)
	defer cancel()
	_ = c.conn.Call(ctx, "_agor/sync", map[string]any{}, nil)
}

// acpReplayWait bounds awaitReplay.
const acpReplayWait = 5 * time.Second
