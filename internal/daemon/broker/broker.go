// Package broker serves the requests an executor makes of the daemon
// (get_api_key, request_permission, report_message): it checks session
// tokens against the executor's user, hands out credentials just in time,
// queues permission questions for a person to answer, feeds agent events
// to the event sink, rate-limits each connection, and audits all of it.
package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/token"
)

// Keys looks up credentials; *credstore.Store implements it. Get reports
// keys of earlier accounts of the owner's name in Key.Stale, and never
// returns them.
type Keys interface {
	Get(o credstore.Owner, name string) (credstore.Key, error)
}

var _ Keys = (*credstore.Store)(nil)

// Mode is a task's permission mode, as execute_prompt carries it.
type Mode string

// Permission modes. Only ModeBypass settles a request by itself; every
// other mode asks a person through the pending queue, which keeps the
// policy in one visible place until the daemon grows a richer one.
const (
	ModeDefault     Mode = "default"
	ModeAcceptEdits Mode = "acceptEdits"
	ModeBypass      Mode = "bypassPermissions"
	ModePlan        Mode = "plan"
)

func (m Mode) valid() bool {
	switch m {
	case ModeDefault, ModeAcceptEdits, ModeBypass, ModePlan:
		return true
	}
	return false
}

// Limits bound what one executor connection may ask. Zero fields take the
// defaults.
type Limits struct {
	Rate              rate.Limit    // requests per second per connection (default 50)
	Burst             int           // bucket size (default 100)
	PermissionTimeout time.Duration // unanswered requests are denied after this (default 60 s)
	MaxPending        int           // open permission requests per user (default 100)
}

// Defaults for Limits.
const (
	DefaultRate              rate.Limit = 50
	DefaultBurst                        = 100
	DefaultPermissionTimeout            = 60 * time.Second
	DefaultMaxPending                   = 100
)

func (l Limits) withDefaults() Limits {
	if l.Rate == 0 {
		l.Rate = DefaultRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultBurst
	}
	if l.PermissionTimeout <= 0 {
		l.PermissionTimeout = DefaultPermissionTimeout
	}
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	return l
}

// Config holds what a Broker needs. Tokens, Keys, Sink and Audit are
// required.
type Config struct {
	Tokens *token.Service
	Keys   Keys
	Sink   *events.Sink
	Audit  *audit.Logger
	Limits Limits
	Log    *slog.Logger
	// Withheld are the credentials the model gateway puts on requests
	// itself: never handed to an executor (get_api_key refuses them),
	// but to the tasks of Direct agents (gateway.direct_agents).
	Withheld []string
	Direct   []string
}

// ErrUnknownMode is returned by StartTask for a mode not in the catalog.
var ErrUnknownMode = errors.New("unknown permission mode")

// Broker is shared by all executor connections; Handler makes the
// per-connection part.
type Broker struct {
	tokens *token.Service
	keys   Keys
	sink   *events.Sink
	audit  *audit.Logger
	limits Limits
	log    *slog.Logger
	// withheld, direct: Config.Withheld, Config.Direct
	withheld, direct []string
	queue            *queue
	stats            counters

	mu    sync.Mutex
	tasks map[string]Mode // live tasks, by task id
}

// New returns a Broker.
func New(cfg Config) *Broker {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	b := &Broker{
		tokens: cfg.Tokens, keys: cfg.Keys, sink: cfg.Sink, audit: cfg.Audit,
		limits: cfg.Limits.withDefaults(), log: log, tasks: map[string]Mode{}, withheld: cfg.Withheld, direct: cfg.Direct,
	}
	b.queue = newQueue(b.limits.MaxPending)
	return b
}

// StartTask registers a task's permission mode and issues the session
// token the daemon passes in execute_prompt; the audit record names the
// mode and the sandbox level the task runs under.
func (b *Broker) StartTask(bind token.Binding, mode Mode, sandbox string) (string, error) {
	if !mode.valid() {
		return "", fmt.Errorf("start task %q: %w: %q", bind.Task, ErrUnknownMode, mode)
	}
	if bind.User == "" || bind.Task == "" {
		return "", fmt.Errorf("start task %q: binding needs a user and a task", bind.Task)
	}
	tok, err := b.tokens.Issue(bind)
	if err != nil {
		return "", fmt.Errorf("start task %q: %w", bind.Task, err)
	}
	b.mu.Lock()
	b.tasks[bind.Task] = mode
	b.mu.Unlock()
	// Its events count toward the person's bound, as the store owns tasks.
	b.sink.Begin(bind.Task, events.Owner{Name: bind.Who(), UID: int64(bind.UID)})
	rec := audit.Record{Action: audit.TaskStarted, User: bind.User, Session: bind.Session, Task: bind.Task, Mode: string(mode), Sandbox: sandbox}
	if bind.Person == "" {
		rec.UID = audit.UIDOf(bind.UID)
	}
	b.audit.Log(rec)
	return tok, nil
}

// EndTask revokes the task's tokens, denies its open permission requests
// and returns the event sequences the sink never received.
func (b *Broker) EndTask(task string) []events.Range {
	b.mu.Lock()
	delete(b.tasks, task)
	b.mu.Unlock()
	n := b.tokens.RevokeTask(task)
	b.queue.cancelTask(task)
	missing := b.sink.End(task)
	b.audit.Log(audit.Record{Action: audit.TaskEnded, Task: task, Count: n})
	return missing
}

// live reports whether task is running, and its mode.
func (b *Broker) live(task string) (Mode, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.tasks[task]
	return m, ok
}

// Stats are running totals since New, for metrics and tests.
type Stats struct {
	KeysIssued      int64 // get_api_key answered with a key
	TokenRefused    int64 // requests refused for their token
	Throttled       int64 // requests refused by the rate limiter
	EventsStored    int64
	EventsDuplicate int64
	EventsDropped   int64 // report_message with a bad token or event
}

type counters struct {
	keysIssued, tokenRefused, throttled          atomic.Int64
	eventsStored, eventsDuplicate, eventsDropped atomic.Int64
}

// Stats returns the totals so far.
func (b *Broker) Stats() Stats {
	c := &b.stats
	return Stats{
		KeysIssued: c.keysIssued.Load(), TokenRefused: c.tokenRefused.Load(), Throttled: c.throttled.Load(),
		EventsStored: c.eventsStored.Load(), EventsDuplicate: c.eventsDuplicate.Load(), EventsDropped: c.eventsDropped.Load(),
	}
}
