// Package token issues and checks session tokens: 256-bit random values
// handed to an executor for one task, stored only as SHA-256 hashes,
// bound to a user, session and task, expiring, with a use limit, and
// revoked when the task ends.
package token

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/secret"
)

// Errors a check can fail with; all are "token invalid" on the wire, and
// the reason goes in the error's data.
var (
	ErrUnknown  = errors.New("token unknown")
	ErrExpired  = errors.New("token expired")
	ErrUsedUp   = errors.New("token use limit reached")
	ErrMismatch = errors.New("token bound to another user, session or task")
)

// Binding is what a token may act for.
type Binding struct {
	User    string // the executor's account, whose connection presents the token
	Session string
	Task    string
	// Person is who asked, when it is not User: with run_as_unix_user
	// false every person's work runs in one shared account's executor, and
	// keys, permission questions and audit records stay the person's.
	Person string
	// UID is the uid of Who()'s account when the task started: a key
	// stored for that name under another uid (an earlier account of the
	// name) is not the person's.
	UID uint32
	// Tool is the task's agent: with the model gateway on, only agents
	// it does not serve (gateway.direct_agents) are handed its keys.
	Tool string
}

// Who is the person the token acts for.
func (b Binding) Who() string {
	if b.Person != "" {
		return b.Person
	}
	return b.User
}

type entry struct {
	hash    [sha256.Size]byte
	binding Binding
	expires time.Time
	uses    int
	maxUses int
}

// Service holds the live tokens. The zero value is not usable; use New.
type Service struct {
	ttl     time.Duration
	maxUses int
	now     func() time.Time

	mu     sync.Mutex
	byHash map[[sha256.Size]byte]*entry
	byTask map[string][]*entry
}

// New returns a Service whose tokens live ttl and allow maxUses checks.
func New(ttl time.Duration, maxUses int) *Service {
	return &Service{
		ttl: ttl, maxUses: maxUses, now: time.Now,
		byHash: map[[sha256.Size]byte]*entry{},
		byTask: map[string][]*entry{},
	}
}

// Issue makes a token for b. The returned string is the only copy of the
// secret: it is never stored.
func (s *Service) Issue(b Binding) (string, error) {
	tok, err := secret.New()
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	e := &entry{hash: secret.Hash(tok), binding: b, expires: s.now().Add(s.ttl), maxUses: s.maxUses}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byHash[e.hash] = e
	s.byTask[b.Task] = append(s.byTask[b.Task], e)
	return tok, nil
}

// Check validates tok for a request that must act for want (empty fields
// are not checked), counts a use, and returns the token's binding.
func (s *Service) Check(tok string, want Binding) (Binding, error) {
	h := secret.Hash(tok)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byHash[h]
	// The map lookup is by hash, so timing tells nothing of the secret;
	// the compare below keeps the check constant-time all the same.
	if e == nil || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return Binding{}, ErrUnknown
	}
	switch {
	case !s.now().Before(e.expires):
		s.removeLocked(e)
		return Binding{}, ErrExpired
	case e.uses >= e.maxUses:
		return Binding{}, ErrUsedUp
	case !matches(e.binding, want):
		return Binding{}, ErrMismatch
	}
	e.uses++
	return e.binding, nil
}

func matches(have, want Binding) bool {
	return (want.User == "" || want.User == have.User) &&
		(want.Session == "" || want.Session == have.Session) &&
		(want.Task == "" || want.Task == have.Task)
}

// RevokeTask ends every token of a task: call it when the task ends.
func (s *Service) RevokeTask(task string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.byTask[task] {
		delete(s.byHash, e.hash)
		n++
	}
	delete(s.byTask, task)
	return n
}

// Sweep drops expired tokens; run it now and then so memory stays bounded.
func (s *Service) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	now := s.now()
	for _, e := range s.byHash {
		if !now.Before(e.expires) {
			s.removeLocked(e)
			n++
		}
	}
	return n
}

func (s *Service) removeLocked(e *entry) {
	delete(s.byHash, e.hash)
	list := s.byTask[e.binding.Task]
	for i, x := range list {
		if x == e {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byTask, e.binding.Task)
	} else {
		s.byTask[e.binding.Task] = list
	}
}

// Live counts tokens held.
func (s *Service) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byHash)
}
