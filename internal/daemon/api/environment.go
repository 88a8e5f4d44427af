package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// withEnv routes t to environment env ("": the default, "host": the
// host): the person must be allowed in it, which is decided here, before
// anything is stored or started for her there. Her executor key then
// names the environment; the account stays hers.
func (s *Server) withEnv(ctx context.Context, t subject, env string) (subject, error) {
	if env == "" {
		env = s.Environments.Default
	}
	if env == "" || env == envdef.Host {
		return t, nil
	}
	if err := envdef.ValidName(env); err != nil {
		return t, rpc.InvalidParams("environment", err.Error())
	}
	if s.SharedAccount != "" {
		return t, rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonSharedAccount,
			"environments run a person's executor as herself; with run_as_unix_user off there is none")
	}
	if err := s.checkEnv(ctx, t.Person, env); err != nil {
		return t, err
	}
	t.Env, t.Executor = env, envdef.Key(t.Executor, env)
	return t, nil
}

// routeEnv routes the work of b, t's: a new session to the environment b
// names (or the default), a follow-up to its session's, and sets b's
// environment to it. t is the person's subject on the host.
func (s *Server) routeEnv(ctx context.Context, t subject, b *apiwire.PromptBody) (subject, error) {
	asked := b.Environment
	if b.SessionID != "" {
		sess, err := s.Store.GetSession(b.SessionID)
		if err != nil || sess.UnixUser != t.Person {
			return t, nil // session() refuses it as not found, saying nothing more
		}
		if asked, err = sessionEnv(sess, asked); err != nil {
			return t, err
		}
	}
	sub, err := s.withEnv(ctx, t, asked)
	if err != nil {
		return t, err
	}
	b.Environment = sub.Env
	return sub, nil
}

// checkEnv maps the policy's refusals to the API's: 403 for a person the
// environment does not list, 400 for a name with no definition.
func (s *Server) checkEnv(ctx context.Context, person, env string) error {
	if s.Environments.Check == nil {
		return rpc.Errorf(rpc.CodeInvalidParams, apiwire.ReasonNoSuchEnvironment, "no environment %q: this daemon has none", env)
	}
	err := s.Environments.Check(ctx, person, env)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, executorunit.ErrEnvironmentNotAllowed):
		return rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonEnvironmentNotAllowed, "%v", err)
	case errors.Is(err, executorunit.ErrNoSuchEnvironment):
		return rpc.Errorf(rpc.CodeInvalidParams, apiwire.ReasonNoSuchEnvironment, "%v", err)
	}
	return lifecycle.Unavailable(err)
}

// inEnv routes a request to the environment its ?environment= names (or
// the default) after forUser has resolved whose it is.
func (s *Server) inEnv(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := s.withEnv(r.Context(), subjectOf(r), r.URL.Query().Get("environment"))
		if err != nil {
			writeError(w, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, t)))
	}
}

// sessionEnv is where a follow-up of sess runs: where the session started.
// A request that names another environment is refused rather than moved:
// the agent's own session state lives in that environment's view.
func sessionEnv(sess store.Session, asked string) (string, error) {
	env := sess.Environment
	if env == "" {
		env = envdef.Host
	}
	if asked != "" && asked != env {
		return "", rpc.InvalidParams("environment", fmt.Sprintf("session %s runs in %s; a session keeps its environment", sess.ID, env))
	}
	return env, nil
}

// taskExecutor is the executor key of a stored task: its person's
// executor in its session's environment.
func (s *Server) taskExecutor(person, sessionID string) string {
	key := s.executorOf(person)
	if sess, err := s.Store.GetSession(sessionID); err == nil && sess.Environment != "" {
		key = envdef.Key(key, sess.Environment)
	}
	return key
}

// runningExecutor is taskExecutor of a task known by id only.
func (s *Server) runningExecutor(person, task string) string {
	if t, err := s.Store.GetTask(task); err == nil {
		return s.taskExecutor(person, t.SessionID)
	}
	return s.executorOf(person)
}
