// Package api is the daemon's client API: HTTP/1.1 and JSON on a Unix
// socket, where every caller is known by SO_PEERCRED (or, on the optional
// TCP listener, by a bearer token). A local user acts as themselves only;
// root and members of the admin group may act for anyone. It serves
// executors, exec, files and watches, terminals (raw streams handed to the
// executor), prompts, sessions, tasks and their events, permission
// questions, credentials, accounts, the audit trail and the metrics.
// Access is decided in one place (access.go); whom a request acts for is
// resolved once (subject.go).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/version"
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
	Backend      lifecycle.Backend
	Broker       *broker.Broker   // permission requests; nil: not served
	Creds        *credstore.Store // nil: not served
	Audit        *audit.Logger    // nil: not served
	Outputs      *Outputs         // exec output for exec calls; the pool's handlers must route to it
	Terminals    *Terminals       // terminal output to attached clients; likewise
	Events       *events.Sink     // agents' events, for live streams
	Store        Store            // sessions, tasks, events; nil: prompts are not served
	AdminGroup   string
	Accounts     *identity.Resolver // who callers are; nil: identity.Default()
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
	// OrphanGrace is how long a prompt's task runs on once the client
	// that started it and follows it is gone, with nobody else following
	// it (default DefaultOrphanGrace); then it is stopped. orphan.go.
	OrphanGrace time.Duration

	// BaseContext bounds background tasks; the daemon cancels it on
	// shutdown, then calls Wait.
	BaseContext context.Context

	metrics metrics
	heavy   turns // each person's output-heavy requests served at once (turns.go)

	watching counter[string] // open watch streams per person
	streams  counter[string] // open event streams per person
	// quotaMu makes a quota's count and the store's insert one step, so
	// that concurrent requests cannot pass a quota together.
	quotaMu sync.Mutex
	tasks   sync.WaitGroup
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/whoami", s.whoami)
	m.HandleFunc("GET /v1/metrics", s.serveMetrics)
	m.HandleFunc("GET /v1/executors", s.listExecutors)
	m.HandleFunc("PUT /v1/executors/{user}", s.forUser(s.ensureExecutor))
	m.HandleFunc("DELETE /v1/executors/{user}", s.ownOrAdmin(s.stopExecutor))
	m.HandleFunc("POST /v1/executors/{user}/exec", s.forUser(s.ownAccount(s.exec)))
	if s.Terminals != nil {
		m.HandleFunc("POST /v1/executors/{user}/terminals", s.forUser(s.ownAccount(s.spawnTerminal)))
		m.HandleFunc("GET /v1/executors/{user}/terminals", s.forUser(s.ownAccount(s.listTerminals)))
		m.HandleFunc("GET /v1/executors/{user}/terminals/{id}/attach", s.forUser(s.ownAccount(s.attachTerminal)))
	}
	m.HandleFunc("GET /v1/executors/{user}/files", s.forUser(s.ownAccount(s.listFiles)))
	m.HandleFunc("POST /v1/executors/{user}/files", s.forUser(s.ownAccount(s.writeFiles)))
	m.HandleFunc("GET /v1/executors/{user}/files/content", s.forUser(s.ownAccount(s.readFile)))
	m.HandleFunc("PUT /v1/executors/{user}/files/content", s.forUser(s.ownAccount(s.writeFile)))
	if s.Watches != nil {
		m.HandleFunc("GET /v1/executors/{user}/files/watch", s.forUser(s.ownAccount(s.watchFiles)))
	}
	if s.Creds != nil {
		m.HandleFunc("PUT /v1/credentials/{name}", s.setCredential)
		m.HandleFunc("DELETE /v1/credentials/{name}", s.deleteCredential)
	}
	if s.Audit != nil {
		m.HandleFunc("GET /v1/audit", s.queryAudit)
	}
	if s.Broker != nil && s.Events != nil && s.Store != nil {
		m.HandleFunc("POST /v1/executors/{user}/prompt", s.forUser(s.prompt))
		m.HandleFunc("POST /v1/sessions/{id}/prompt", s.promptAsync)
		m.HandleFunc("GET /v1/sessions", s.listSessions)
		m.HandleFunc("POST /v1/sessions", s.createSession)
		m.HandleFunc("GET /v1/sessions/{id}/tasks", s.listTasks)
		m.HandleFunc("GET /v1/tasks/{id}", s.getTask)
		m.HandleFunc("GET /v1/tasks/{id}/events", s.taskEvents)
		m.HandleFunc("POST /v1/tasks/{id}/stop", s.stopTask)
	}
	s.accountRoutes(m)
	if s.Broker != nil {
		m.HandleFunc("GET /v1/permissions", s.listPermissions)
		m.HandleFunc("POST /v1/permissions/{id}", s.decidePermission)
	}
	return s.guard(m, s.identify(m))
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

// health answers that the daemon serves, and, when it keeps a store,
// the state of its filesystem (agorctl doctor reports it).
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	h := apiwire.Health{Status: "ok", Version: version.Version}
	if s.Store != nil {
		h.Storage = storageView(s.Store.Space())
	}
	writeJSON(w, http.StatusOK, h)
}

func storageView(sp store.Space) *apiwire.Storage {
	v := &apiwire.Storage{State: "ok", StateDir: sp.Dir, FreeBytes: sp.Free, MinFreeBytes: sp.Floor,
		Episodes: sp.Episodes, Pending: sp.Pending, Reason: sp.Reason}
	if sp.Full {
		v.State, v.Since = "full", &sp.Since
	}
	return v
}

// ExecutorInfo is an executor as the API shows it.
type ExecutorInfo = apiwire.ExecutorInfo

// listExecutors lists the units with, for running ones, their usage. A
// backend that cannot read usage still lists (the error is logged).
// Admins see everyone's; a person sees her own executor only, listed
// (stopped) even before its unit was ever loaded.
func (s *Server) listExecutors(w http.ResponseWriter, r *http.Request) {
	list, err := s.Backend.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	list = s.executorsSeen(s.caller(r), list)
	usage := s.usage(r.Context(), list)
	live := s.Pool.Live()
	out := make([]ExecutorInfo, 0, len(list))
	for _, st := range list {
		out = append(out, ExecutorInfo{User: st.User, Socket: st.Socket, Service: st.Service, Connected: slices.Contains(live, st.User), Usage: usage[st.User],
			Network: s.networkOf(r.Context(), st.User), JobID: st.JobID, Node: st.Node, JobState: st.JobState})
	}
	writeJSON(w, http.StatusOK, apiwire.ExecutorList{Executors: out})
}

// executorOf is the account whose executor runs person's work.
func (s *Server) executorOf(person string) string {
	if s.SharedAccount != "" {
		return s.SharedAccount
	}
	return person
}

// ensureExecutor starts the subject's executor when need be and answers
// with a ping made now: the connection's first ping is as old as the
// connection, and a person asking whether her executor is up wants to know
// it is now.
func (s *Server) ensureExecutor(w http.ResponseWriter, r *http.Request) {
	name := subjectOf(r).Executor
	_, ping, err := s.Pool.Get(r.Context(), name)
	if err == nil {
		err = s.Pool.Call(r.Context(), name, protocol.MethodPing, nil, &ping)
	}
	if err != nil {
		s.log().Warn("executor refused", "user", name, "err", err)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ExecutorInfo{User: name, Connected: true, Ping: &ping})
}

func (s *Server) stopExecutor(w http.ResponseWriter, r *http.Request) {
	name := s.executorOf(r.PathValue("user"))
	if err := account.ValidName(name); err != nil {
		writeError(w, rpc.InvalidParams("user", err.Error()))
		return
	}
	if err := s.Backend.Stop(r.Context(), name); err != nil {
		writeError(w, err)
		return
	}
	s.log().Info("executor stopped: "+name, "user", name, "by", s.caller(r).user.Name)
	writeJSON(w, http.StatusOK, apiwire.ExecutorStopped{User: name, Stopped: true})
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
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
