package api

import (
	"context"
	"time"

	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// budgetLeft refuses a prompt of a person whose budget is spent.
func (s *Server) budgetLeft(person string) error {
	if s.Gateway == nil {
		return nil
	}
	if err := s.Gateway.Admit(person); err != nil {
		return rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonBudgetReached, "%s", err.Error())
	}
	return nil
}

// gatewayToken is task's credential at the gateway, for executor's relay
// (never its agent), "" when there is no gateway. An executor from
// before the door (RevisionDoor) would hand the credential to its agent,
// and one from before the gateway would ask for the key itself, which
// the gateway's keys are not given out for: either is replaced by the
// installed one when idle, and otherwise the prompt (task) is refused,
// saying so.
func (s *Server) gatewayToken(ctx context.Context, executor, task, tool string, sess store.Session) (string, error) {
	if s.Gateway == nil || s.Gateway.Direct(tool) {
		return "", nil
	}
	_, ping, err := s.Pool.Get(ctx, executor)
	if err != nil {
		return "", err
	}
	if ping.Protocol < protocol.RevisionDoor {
		if ping, err = s.replaceOld(ctx, executor, task, ping, protocol.RevisionDoor); err != nil {
			return "", err
		}
	}
	return s.Gateway.Token(task, sess.ID, uint32(ping.UID)), nil
}

// TaskNotice has person's running task emit a notice event (task_notice):
// the gateway's word that her budget is nearly spent.
func (s *Server) TaskNotice(person, task, message string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res protocol.TaskNoticeResult
	p := protocol.TaskNoticeParams{TaskID: task, Code: protocol.NoticeBudget, Message: message}
	if err := s.Pool.Call(ctx, s.runningExecutor(person, task), protocol.MethodTaskNotice, p, &res); err != nil {
		s.log().Warn("a task's notice was not delivered", "task", task, "user", person, "err", err)
	}
}
