package task

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
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

func (h *host) Emit(ev agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	data, err := json.Marshal(ev)
	if err != nil {
		h.log.Warn("event not encoded", "task", h.task, "type", ev.Type, "err", err)
		return
	}
	m := protocol.ReportMessage{SessionToken: h.token, TaskID: h.task, Sequence: h.seq, Timestamp: time.Now().UnixMilli(), EventType: ev.Type, EventData: data}
	if err := h.conn.Notify(protocol.MethodReportMessage, m); err != nil {
		h.log.Warn("report_message not sent", "task", h.task, "sequence", h.seq, "err", err)
		return
	}
	h.seq++
}

func (h *host) Ask(ctx context.Context, tool string, input json.RawMessage) agent.Decision {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	p := protocol.RequestPermissionParams{SessionToken: h.token, TaskID: h.task, ToolName: tool, ToolInput: input}
	var d protocol.RequestPermissionResult
	if err := h.conn.Call(ctx, protocol.MethodRequestPermission, p, &d); err != nil {
		return agent.Decision{Approved: false, Reason: fmt.Sprintf("no decision: %v", err)}
	}
	return agent.Decision{Approved: d.Approved, Reason: d.Reason}
}

// apiKey asks the daemon for the agent's key, just in time.
func (h *host) apiKey(ctx context.Context, name string) (string, error) {
	var res protocol.GetAPIKeyResult
	err := h.conn.Call(ctx, protocol.MethodGetAPIKey, protocol.GetAPIKeyParams{SessionToken: h.token, CredentialKey: name}, &res)
	if err != nil {
		return "", fmt.Errorf("get_api_key %s: %w", name, err)
	}
	return res.APIKey, nil
}
