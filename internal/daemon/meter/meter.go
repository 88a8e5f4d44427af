// Package meter is the daemon's half of the model gateway: it says who a
// gateway token stands for and with which key and where a request goes
// (Authorize), refuses a person past her budget, and writes each
// request's usage to the ledger (Record). The gateway package does the
// HTTP; this one decides.
package meter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/netpolicy"
)

// Keys is where a person's key, else the daemon's, comes from.
type Keys interface {
	Get(owner credstore.Owner, name string) (credstore.Key, error)
}

// Meter decides for the gateway.
type Meter struct {
	Signer  *Signer
	Store   *store.DB
	Keys    Keys
	Config  func() config.Gateway
	InGroup func(user, group string) (bool, error)
	Log     *slog.Logger
	Audit   *audit.Logger    // refusals, keys put on; nil: none recorded
	Now     func() time.Time // nil: time.Now
	// Notice tells a running task's person something (a budget nearly
	// spent); nil: nobody is told.
	Notice func(person, task, message string)
	// Network is a person's network set now (network:), whose egress
	// rules her model requests go by; nil: everyone's is open.
	Network func(ctx context.Context, person string) (config.NetworkSet, error)
	// Resolve looks a name up for those rules; nil: the system's resolver.
	Resolve netpolicy.Resolver
	// RunsAs is the uid whose executor runs a task: with run_as_unix_user
	// false the shared account's, not the person's the task records. The
	// door takes a task's credential only from that uid's relay, and an
	// error refuses it. nil: the task's person's uid.
	RunsAs func(ctx context.Context, t store.Task) (int64, error)

	mu     sync.Mutex
	warned map[string]bool // task, period, kind: told once
	issued map[string]bool // task, credential, scope: audited once (issued.go)
	holds  holds           // the requests in flight's reservations
}

// keyOf is the credential each API family's key is stored under (as
// agorctl creds set names it, and as the CLIs read it).
var keyOf = map[string]string{"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}

// KeyName is the credential api's key is stored under.
func KeyName(api gateway.API) string { return keyOf[family(api)] }

// KeyNames are the credentials the gateway puts on requests itself.
func KeyNames() []string { return slices.Sorted(maps.Values(keyOf)) }

// family is the upstreams' name of api.
func family(api gateway.API) string {
	switch api {
	case gateway.Anthropic:
		return "anthropic"
	case gateway.Gemini:
		return "gemini"
	}
	return "openai"
}

// Authorize implements gateway.Authorizer: tok is the credential the
// executor's relay put on the connection (never what the agent sent):
// one this daemon signed, for the uid of the executor that relayed it
// (the gateway socket's SO_PEERCRED), whose task runs now (door.go); the
// person must be under her budget; the key is hers, else the daemon's.
func (m *Meter) Authorize(ctx context.Context, api gateway.API, tok string) (gateway.Grant, error) {
	g, uid, err := m.taskOf(ctx, api, family(api), tok)
	if err != nil {
		return g, err
	}
	st, r := m.overBudget(g.Person)
	if r != nil {
		return gateway.Grant{}, r
	}
	if r := m.egress(ctx, g); r != nil {
		return gateway.Grant{}, r
	}
	m.warnNearly(g.Person, g.Task, st)
	key, err := m.Keys.Get(credstore.User(g.Person, uid), KeyName(api))
	m.keyIssued(g, uid, KeyName(api), key, err)
	if err != nil {
		m.log().Warn("gateway: no key for a task's request", "user", g.Person, "credential", KeyName(api), "err", err)
		return gateway.Grant{}, &gateway.Refusal{Status: 403, Message: fmt.Sprintf("agor: no %s is set for %s nor daemon-wide (agorctl creds set)", KeyName(api), g.Person)}
	}
	g.Key = key.Value
	return g, nil
}

// AuthorizeOwn implements gateway.OwnAuthorizer: a task whose agent signs
// in with its person's own subscription. The credential is checked as
// for Authorize; no key is put on, and the person's budget, which bounds
// what the operator's keys spend, does not apply to it.
func (m *Meter) AuthorizeOwn(ctx context.Context, api gateway.API, upstream, tok string) (gateway.Grant, error) {
	if upstream == "" {
		upstream = family(api)
	}
	g, _, err := m.taskOf(ctx, api, upstream, tok)
	if err != nil {
		return g, err
	}
	if r := m.egress(ctx, g); r != nil {
		return gateway.Grant{}, r
	}
	g.Own = true
	return g, nil
}

// taskOf is the grant tok stands for, without a key: the task it names,
// running now, for the uid that relayed it (door.go).
func (m *Meter) taskOf(ctx context.Context, api gateway.API, upstream, tok string) (gateway.Grant, uint32, error) {
	task, sess, err := m.door(ctx, tok)
	if err != nil {
		return gateway.Grant{}, 0, err
	}
	up, err := m.upstream(upstream)
	if err != nil {
		return gateway.Grant{}, 0, &gateway.Refusal{Status: 502, Message: "agor: " + err.Error()}
	}
	return gateway.Grant{Person: task.UnixUser, Task: task.ID, Session: sess.ID, Agent: sess.AgenticTool,
		API: api, Upstream: up}, uint32(task.UID), nil
}

func (m *Meter) upstream(name string) (*url.URL, error) {
	raw := m.Config().Upstreams[name]
	if raw == "" {
		return nil, fmt.Errorf("no gateway.upstreams.%s is configured", name)
	}
	return url.Parse(raw)
}

// Record implements gateway.Recorder: one ledger row, priced.
func (m *Meter) Record(e gateway.Entry) {
	task, err := m.Store.GetTask(e.Task)
	uid := store.NoUID
	if err == nil {
		uid = task.UID
	}
	u := e.Usage
	cost := m.Config().PriceOf(e.Model).CostMicros(u.Input, u.Output, u.CacheRead, u.CacheWrite)
	if e.Own { // the person's own subscription: counted, not charged
		cost = 0
	}
	s := store.Spend{At: e.Ended, User: e.Person, UID: uid, Session: e.Session, Task: e.Task, Agent: e.Agent,
		API: string(e.API), Model: e.Model, Input: u.Input, Output: u.Output, CacheRead: u.CacheRead,
		CacheWrite: u.CacheWrite, CostMicros: cost, Status: e.Status, Streamed: e.Streamed, Error: e.Err}
	if err := m.Store.AddSpend(s); err != nil {
		m.log().Error("gateway: a request's usage could not be written to the ledger", "user", e.Person, "task", e.Task, "err", err)
	}
}

func (m *Meter) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

func (m *Meter) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// Token is the credential of task (of session, run by the executor of
// uid) that the executor's relay puts on the task's connections.
func (m *Meter) Token(task, session string, uid uint32) string {
	return m.Signer.Token(task, session, uid)
}

// Admit is nil while person may spend, else why not (her budget is
// reached): checked before her prompt starts any agent.
func (m *Meter) Admit(person string) error {
	if _, r := m.overBudget(person); r != nil {
		return errors.New(r.Message)
	}
	return nil
}
