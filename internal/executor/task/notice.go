package task

import (
	"context"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// notice serves task_notice: the daemon's word to the person during a
// running turn, emitted as a notice event in the turn's own stream (so it
// is numbered, kept and resumed like the agent's events).
func (s *Service) notice(_ context.Context, p protocol.TaskNoticeParams) (protocol.TaskNoticeResult, error) {
	s.mu.Lock()
	o := s.owned[p.TaskID]
	s.mu.Unlock()
	if o == nil {
		return protocol.TaskNoticeResult{}, nil
	}
	select {
	case <-o.done:
		return protocol.TaskNoticeResult{}, nil // ended: its stream is closed
	default:
	}
	o.h.Emit(agent.Event{Type: protocol.EventNotice, Data: map[string]any{"code": p.Code, "message": p.Message}})
	return protocol.TaskNoticeResult{Emitted: true}, nil
}
