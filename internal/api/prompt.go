package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/agor-sh/agor/internal/broker"
	"github.com/agor-sh/agor/internal/events"
	"github.com/agor-sh/agor/internal/rpc"
	"github.com/agor-sh/agor/internal/token"
)

// PromptBody asks for one agent turn in the user's executor.
type PromptBody struct {
	SessionID      string `json:"session_id"` // "" starts a session
	Tool           string `json:"agentic_tool"`
	Prompt         string `json:"prompt"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	Model          string `json:"model,omitempty"`
	TimeoutMS      int64  `json:"timeout_ms"`
}

// Sessions remembers each session's agent session, so the next prompt of
// a session resumes the agent's own (until the store keeps it). The key
// has the tool and cwd too: an agent finds its sessions by directory.
type Sessions struct {
	mu    sync.Mutex
	agent map[string]string
}

func (s *Sessions) get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agent[id]
}

func (s *Sessions) set(id, agentSession string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil {
		s.agent = map[string]string{}
	}
	s.agent[id] = agentSession
}

func (b PromptBody) sessionKey() string { return b.SessionID + "\x00" + b.Tool + "\x00" + b.Cwd }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// promptLine is one line of the prompt's NDJSON reply: first the ids,
// then each event as it happens, then the result.
type promptLine struct {
	TaskID    string          `json:"task_id,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Event     *events.Event   `json:"event,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Missing   []events.Range  `json:"missing_events,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
}

// prompt runs a turn and streams its events (application/x-ndjson).
func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var b PromptBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	if b.SessionID == "" {
		b.SessionID = newID()
	}
	if b.PermissionMode == "" {
		b.PermissionMode = string(broker.ModeDefault)
	}
	user, task := r.PathValue("user"), newID()
	tok, err := s.Broker.StartTask(token.Binding{User: user, Session: b.SessionID, Task: task}, broker.Mode(b.PermissionMode))
	if err != nil {
		writeError(w, rpc.InvalidParams("permission_mode", err.Error()))
		return
	}
	sub := s.Events.Subscribe(task, 4096)
	defer sub.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	_ = enc.Encode(promptLine{TaskID: task, SessionID: b.SessionID})
	flush()
	done := make(chan promptLine, 1)
	go func() { done <- s.runPrompt(r.Context(), user, task, tok, b) }()
	for {
		select {
		case ev := <-sub.C:
			_ = enc.Encode(promptLine{Event: &ev})
			flush()
		case last := <-done:
			drain(sub, enc) // events came before the result; some may still wait here
			last.Missing = s.Broker.EndTask(task)
			_ = enc.Encode(last)
			flush()
			return
		}
	}
}

func drain(sub *events.Subscription, enc *json.Encoder) {
	for {
		select {
		case ev := <-sub.C:
			_ = enc.Encode(promptLine{Event: &ev})
		default:
			return
		}
	}
}

func (s *Server) runPrompt(ctx context.Context, user, task, tok string, b PromptBody) promptLine {
	params := map[string]any{
		"session_token": tok, "session_id": b.SessionID, "task_id": task, "agentic_tool": b.Tool,
		"prompt": b.Prompt, "cwd": b.Cwd, "permission_mode": b.PermissionMode, "model": b.Model,
		"timeout_ms": b.TimeoutMS, "agent_session_id": s.Sessions.get(b.sessionKey()),
	}
	var res json.RawMessage
	if err := s.Pool.Call(ctx, user, "execute_prompt", params, &res); err != nil {
		var e *rpc.Error
		body := &ErrorBody{}
		if !asRPC(err, &e) {
			e = rpc.Errorf(rpc.CodeInternalError, "internal_error", "%v", err)
		}
		body.Error.Code, body.Error.Reason, body.Error.Message = e.Code, e.Reason(), e.Message
		return promptLine{Error: body}
	}
	var r struct {
		AgentSessionID string `json:"agent_session_id"`
	}
	if json.Unmarshal(res, &r) == nil && r.AgentSessionID != "" {
		s.Sessions.set(b.sessionKey(), r.AgentSessionID)
	}
	return promptLine{Result: res}
}
