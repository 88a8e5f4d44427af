package api

import (
	"context"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// An interactive prompt (apiwire.PromptBody.Interactive) is a prompt
// task like any other: the same admission, session, token, gateway
// credential and record, by the same code. Only two things differ: its
// executor must know the field, and a client that stops following it
// has detached from the agent's terminal, which its executor bounds as
// any terminal's (terminal.DefaultDetachGrace), so it is not orphaned.

// interactiveExecutor has executor run a build that knows interactive
// prompts (RevisionInteractive): one from before would run a headless
// turn instead. An older idle one is replaced, as for the gateway.
func (s *Server) interactiveExecutor(ctx context.Context, executor, task string) error {
	_, ping, err := s.Pool.Get(ctx, executor)
	if err != nil {
		return err
	}
	if ping.Protocol < protocol.RevisionInteractive {
		_, err = s.replaceOld(ctx, executor, task, ping, protocol.RevisionInteractive)
	}
	return err
}

// checkInteractive refuses what no executor could run: a bad size, or an
// interactive session in the shared account, whose terminal everyone's
// work could reach.
func (s *Server) checkInteractive(b apiwire.PromptBody) error {
	switch {
	case b.Interactive == nil:
		return nil
	case s.SharedAccount != "":
		return rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonSharedAccount,
			"interactive sessions need each person's own executor: every person's work runs as %s here", s.SharedAccount)
	}
	return b.Interactive.Validate()
}
