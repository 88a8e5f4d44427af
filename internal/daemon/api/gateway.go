package api

import (
	"context"

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

// gatewayToken is the token executor's agents of sess present to the
// gateway, "" when there is no gateway. An executor from before the
// gateway would ask for the key itself, which the gateway's keys are
// not given out for: its prompt is refused, saying so.
func (s *Server) gatewayToken(ctx context.Context, executor string, sess store.Session) (string, error) {
	if s.Gateway == nil {
		return "", nil
	}
	_, ping, err := s.Pool.Get(ctx, executor)
	if err != nil {
		return "", err
	}
	if ping.Protocol < protocol.RevisionGateway {
		return "", rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonPingFailed,
			"the executor of %s runs %s (protocol revision %d), from before the model gateway; it runs the installed version once idle (agorctl executors stop %s)",
			executor, ping.Version, ping.Protocol, executor)
	}
	return s.Gateway.Token(sess.ID, uint32(ping.UID)), nil
}
