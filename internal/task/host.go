package task

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/agent"
	"github.com/agor-sh/agor/internal/rpc"
)

// host is the agent.Host of one task: events go to the daemon as
// report_message with a gap-free sequence, questions as request_permission.
type host struct {
	conn  *rpc.Conn
	token string
	task  string
	log   *slog.Logger

	mu  sync.Mutex // one sequence, in send order
	seq int64
}

var _ agent.Host = (*host)(nil)

// message is report_message's params.
type message struct {
	SessionToken string      `json:"session_token"`
	TaskID       string      `json:"task_id"`
	Sequence     int64       `json:"sequence"`
	Timestamp    int64       `json:"timestamp"`
	EventType    string      `json:"event_type"`
	EventData    agent.Event `json:"event_data"`
}

func (h *host) Emit(ev agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := message{SessionToken: h.token, TaskID: h.task, Sequence: h.seq, Timestamp: time.Now().UnixMilli(), EventType: ev.Type, EventData: ev}
	if err := h.conn.Notify("report_message", m); err != nil {
		h.log.Warn("report_message not sent", "task", h.task, "sequence", h.seq, "err", err)
		return
	}
	h.seq++
}

func (h *host) Ask(ctx context.Context, tool string, input json.RawMessage) agent.Decision {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	p := map[string]any{"session_token": h.token, "task_id": h.task, "tool_name": tool, "tool_input": input}
	var d struct {
		Approved bool   `json:"approved"`
		Reason   string `json:"reason"`
	}
	if err := h.conn.Call(ctx, "request_permission", p, &d); err != nil {
		return agent.Decision{Approved: false, Reason: fmt.Sprintf("no decision: %v", err)}
	}
	return agent.Decision{Approved: d.Approved, Reason: d.Reason}
}

// apiKey asks the daemon for the agent's key, just in time.
func (h *host) apiKey(ctx context.Context, name string) (string, error) {
	var res struct {
		APIKey string `json:"api_key"`
	}
	err := h.conn.Call(ctx, "get_api_key", map[string]string{"session_token": h.token, "credential_key": name}, &res)
	if err != nil {
		return "", fmt.Errorf("get_api_key %s: %w", name, err)
	}
	return res.APIKey, nil
}
