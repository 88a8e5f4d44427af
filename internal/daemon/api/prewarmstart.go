package api

import (
	"context"

	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// ExecutorStarted pre-warms, when the executor of key has just started,
// the agent of its person's session used last there, as a follow-up of
// it would run (resumed): a person whose executor starts for anything
// but a prompt (her terminal, the page's files, an exec) is about to
// work, most often on from where she left off. An executor started for
// a prompt gets nothing: the prompt's task is stored before the start,
// and it starts its own agent (IdleLatestSession). The daemon calls this
// from its unit watch; the work is on background. Off with
// PrewarmAtStart false, and whenever prewarm is (no gateway).
func (s *Server) ExecutorStarted(key string) {
	if !s.PrewarmAtStart || s.Gateway == nil || s.PrewarmIdle <= 0 || s.Store == nil || s.SharedAccount != "" {
		return
	}
	s.background(func(ctx context.Context) {
		out, err := s.prewarmOnStart(ctx, key)
		if err != nil || out.Status != "started" {
			s.log().Debug("not pre-warmed at the executor's start", "executor", key, "reason", out.Reason, "err", err)
			return
		}
		s.log().Info("pre-warmed at the executor's start", "executor", key, "session", out.SessionID)
	})
}

func (s *Server) prewarmOnStart(ctx context.Context, key string) (apiwire.PrewarmAccepted, error) {
	person, env := envdef.SplitKey(key)
	uid, err := s.lookupUID(ctx, person)
	if err != nil {
		return apiwire.PrewarmAccepted{}, err
	}
	sess, err := s.Store.IdleLatestSession(person, uid, env)
	if err != nil {
		return apiwire.PrewarmAccepted{}, err
	}
	t := subject{Person: person, UID: uid, Executor: key, Env: env}
	return s.prewarm(ctx, t, apiwire.PromptBody{SessionID: sess.ID, Cwd: sess.Cwd,
		PermissionMode: sess.PermissionMode, Model: sess.Model, Environment: env})
}
