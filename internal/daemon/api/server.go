package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/reserve"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// MaxBody bounds a request body.
const MaxBody = 1 << 20

// Server holds what the handlers use.
type Server struct {
	// NetworkMode names a person's network mode; EgressTotals is every
	// person's egress so far (network.go). nil: not shown.
	NetworkMode  func(ctx context.Context, user string) string
	EgressTotals func() map[string]apiwire.ExecutorNetwork
	Pool         *pool.Pool
	Backend      executorunit.Backend
	Broker       *broker.Broker   // permission requests; nil: not served
	Creds        *credstore.Store // nil: not served
	Audit        *audit.Logger    // nil: not served
	Outputs      *Outputs         // exec output for exec calls; the pool's handlers must route to it
	Terminals    *Terminals       // terminal output to attached clients; likewise
	Events       *events.Sink     // agents' events, for live streams
	Store        Store            // sessions, tasks, events; nil: prompts are not served
	AdminGroup   string
	Accounts     *identity.Resolver // who callers are; nil: identity.Default()
	Gateway      Gateway            // the model gateway; nil: keys are fetched just in time
	// SharedAccount, when set (run_as_unix_user: false), is the one
	// account whose executor runs everyone's work; sessions, tasks, keys,
	// permission questions and the audit trail still name the person.
	SharedAccount string
	// SharedAccess turns on exec, files and terminals for persons in the
	// shared account (execution.shared_account_access); see ownAccount.
	SharedAccess bool
	// Admit, when set, checks a person against the execution policy
	// before their work is taken (with a shared account the backend only
	// sees the shared account) and says their account's uid; nil: anyone
	// with an account.
	Admit func(ctx context.Context, person string) (uid uint32, err error)
	// Watches routes file_event to watch streams; nil: files are served
	// without watch.
	Watches *Watches
	// MaxFileBytes bounds one read or write through the API (default
	// DefaultMaxFileBytes); MaxWatches the watch streams one person holds
	// open (default DefaultMaxWatches).
	MaxFileBytes int64
	MaxWatches   int
	// Sandbox is the levels requests may ask for, and the default
	// (nil: any level, default off).
	Sandbox *sandbox.Policy
	// Quotas bound what one person may have stored or open (zero fields:
	// config.DefaultQuotas).
	Quotas   config.Quotas
	Retained *Retained // the store's size and what retention removed (metrics); nil: not shown
	Log      *slog.Logger
	// Environments are where people's work may run besides the host
	// (environment.go).
	Environments Environments
	// OrphanGrace is how long a prompt's task runs on once the client
	// that started it and follows it is gone, with nobody else following
	// it (default DefaultOrphanGrace); then it is stopped. orphan.go.
	OrphanGrace time.Duration
	// PrewarmIdle is agents.prewarm_idle_ms: how long a pre-warmed agent,
	// and the session id reserved for it, wait for their prompt (0: no
	// pre-warming). prewarm.go.
	PrewarmIdle time.Duration
	// PrewarmAtStart is agents.prewarm_at_executor_start: a person's
	// executor that starts for anything but a prompt pre-warms her last
	// session's agent (prewarmstart.go).
	PrewarmAtStart bool

	// BaseContext bounds background tasks; the daemon cancels it on
	// shutdown, then calls Wait.
	BaseContext context.Context

	metrics metrics
	heavy   turns // each person's output-heavy requests served at once (turns.go)
	// reserved are the session ids pre-warmed agents were started for
	// before their session existed.
	reserved reserve.Table

	watching counter[string] // open watch streams per person
	streams  counter[string] // open event streams per person
	// quotaMu makes a quota's count and the store's insert one step, so
	// that concurrent requests cannot pass a quota together.
	quotaMu sync.Mutex
	tasks   sync.WaitGroup
}

// ConnContext puts the peer's credentials in every request's context.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	ctx = withUnixClient(ctx, c)
	if cc, ok := c.(*countedConn); ok {
		return peer.NewContext(ctx, cc.cred)
	}
	if cred, err := peer.Of(c); err == nil {
		return peer.NewContext(ctx, cred)
	}
	return ctx
}

// executorOf is the account whose executor runs person's work.
func (s *Server) executorOf(person string) string {
	if s.SharedAccount != "" {
		return s.SharedAccount
	}
	return person
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// Gateway is the model gateway as the API uses it (meter.Meter): a
// credential per task, which the task's executor keeps from its agent
// (its relay puts it on the task's connections), a person's budget
// checked before her prompt starts any agent, and her standing against
// it shown with her usage (modelusage.go).
type Gateway interface {
	Token(task, session string, uid uint32) string
	// Admit is nil while person may spend, else the refusal to show.
	Admit(person string) error
	// Standings are person's spend against each bound of her budget
	// (none: no bound); Currency is the unit of costs and cost bounds.
	Standings(person string) ([]meter.Standing, error)
	Currency() string
	// Direct: tool's model calls bypass the gateway (its key is handed
	// to it just in time, as with the gateway off).
	Direct(tool string) bool
}

// errorBody is err as the API shows it, and its HTTP status; an error
// that is not the protocol's own is an internal error.
func errorBody(err error) (int, *apiwire.ErrorBody) {
	var e *rpc.Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, store.ErrFull):
		e = rpc.Errorf(protocol.CodeStorageFull, protocol.ReasonStorageFull, "%v", err)
	default:
		e = rpc.Errorf(rpc.CodeInternalError, "internal_error", "%v", err)
	}
	body := &apiwire.ErrorBody{}
	body.Error.Code, body.Error.Reason, body.Error.Message = e.Code, e.Reason(), e.Message
	if tooLarge[e.Reason()] {
		return http.StatusRequestEntityTooLarge, body
	}
	return status(e.Code), body
}

func writeError(w http.ResponseWriter, err error) {
	code, body := errorBody(err)
	writeJSON(w, code, body)
}

func status(code int) int {
	switch code {
	case rpc.CodeInvalidParams, rpc.CodeInvalidRequest:
		return http.StatusBadRequest
	case protocol.CodePermissionDenied, protocol.CodeTokenInvalid:
		return http.StatusForbidden
	case protocol.CodeNotFound, protocol.CodeTaskNotFound:
		return http.StatusNotFound
	case protocol.CodeLimitReached:
		return http.StatusTooManyRequests
	case protocol.CodeExecutorUnavailable:
		return http.StatusServiceUnavailable
	case protocol.CodeStorageFull:
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// NewHTTPServer wraps h with the timeouts a local API wants.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			guardBody(w, r, BodyReadTimeout)
			h.ServeHTTP(w, r)
		}),
		ConnContext:       ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

func (s *Server) accounts() *identity.Resolver {
	if s.Accounts != nil {
		return s.Accounts
	}
	return identity.Default()
}

// Environments is where a person's work may run besides the host.
type Environments struct {
	// Policy decides who may use which (executorunit.Policy.CheckEnvironment
	// over the root-owned definitions); nil: no environments.
	Check func(ctx context.Context, user, env string) error
	// Default is the environment of a request that names none ("": the
	// host; a request names "host" to run there anyway).
	Default string
}
