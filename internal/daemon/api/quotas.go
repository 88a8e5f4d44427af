package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// liveBound is how many events wait for one live follower before it is
// cut off (it then resumes from the store); its queue grows to that only
// while the follower is behind.
const liveBound = 4096

// quotas is the configured quotas, each zero one at its default.
func (s *Server) quotas() config.Quotas {
	q, d := s.Quotas, config.DefaultQuotas()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&q.MaxSessionsPerUser, d.MaxSessionsPerUser)
	pick(&q.MaxTasksPerSession, d.MaxTasksPerSession)
	pick(&q.MaxCredentialsPerUser, d.MaxCredentialsPerUser)
	pick(&q.MaxEventStreams, d.MaxEventStreams)
	if q.MaxPromptBytes <= 0 {
		q.MaxPromptBytes = d.MaxPromptBytes
	}
	if q.MaxCredentialBytes <= 0 {
		q.MaxCredentialBytes = d.MaxCredentialBytes
	}
	return q
}

// overQuota is the refusal of one more of what key bounds to max.
func overQuota(reason, key string, max int64, what string) error {
	return rpc.Errorf(protocol.CodeLimitReached, reason, "%s: quotas.%s is %d", what, key, max)
}

// checkSessionQuota refuses a new session for an account at its quota.
func (s *Server) checkSessionQuota(user string, uid uint32) error {
	n, err := s.Store.CountSessions(user, uid)
	if err != nil {
		return err
	}
	if max := s.quotas().MaxSessionsPerUser; n >= max {
		return overQuota(ReasonTooManySessions, "max_sessions_per_user", int64(max), user+" has "+strconv.Itoa(n)+" sessions")
	}
	return nil
}

// checkStoredBytes refuses a prompt that would take what user's account
// keeps in the store (prompts and events) past quotas.max_event_bytes_per_user:
// a prompt counts when it is written, not at the next sweep.
func (s *Server) checkStoredBytes(user string, uid uint32, prompt int64) error {
	held, err := s.Store.StoredBytes(user, int64(uid))
	if err != nil {
		return err
	}
	if max := s.quotas().MaxEventBytesPerUser; max > 0 && held+prompt > max {
		return overQuota(ReasonStoredBytes, "max_event_bytes_per_user", max,
			user+" keeps "+strconv.FormatInt(held, 10)+" bytes of prompts and events; this prompt adds "+strconv.FormatInt(prompt, 10))
	}
	return nil
}

// checkTaskQuota refuses one more task in a session at its quota.
func (s *Server) checkTaskQuota(session string) error {
	n, err := s.Store.CountTasks(session)
	if err != nil {
		return err
	}
	if max := s.quotas().MaxTasksPerSession; n >= max {
		return overQuota(ReasonTooManyTasks, "max_tasks_per_session", int64(max), "session "+session+" has "+strconv.Itoa(n)+" tasks")
	}
	return nil
}

// promptBodyLimit is how much of a prompt request is read: the prompt at
// its quota plus room for the other fields.
func (s *Server) promptBodyLimit() int64 { return s.quotas().MaxPromptBytes + MaxBody }

// decodeErr is a body's decoding error as the API answers it: a body past
// its limit is the prompt's size, anything else a bad body.
func (s *Server) decodeErr(err error) error {
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		return s.promptTooLarge(tooBig.Limit)
	}
	return rpc.InvalidParams("body", err.Error())
}

func (s *Server) promptTooLarge(n int64) error {
	return overQuota(ReasonPromptTooLarge, "max_prompt_bytes", s.quotas().MaxPromptBytes, "prompt of at least "+strconv.FormatInt(n, 10)+" bytes")
}

// eventStream counts one more open event stream of person, or refuses.
func (s *Server) eventStream(person string) (release func(), err error) {
	max := s.quotas().MaxEventStreams
	if !s.streams.take(person, max) {
		return nil, overQuota(ReasonTooManyEventStreams, "max_event_streams_per_user", int64(max), person+" has "+strconv.Itoa(max)+" event streams open")
	}
	return func() { s.streams.put(person) }, nil
}
