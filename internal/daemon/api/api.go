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
	"net/http"
)

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/whoami", s.whoami)
	m.HandleFunc("GET /v1/metrics", s.serveMetrics)
	m.HandleFunc("GET /v1/executors", s.listExecutors)
	m.HandleFunc("PUT /v1/executors/{user}", s.forUser(s.ensureExecutor))
	m.HandleFunc("DELETE /v1/executors/{user}", s.ownOrAdmin(s.stopExecutor))
	m.HandleFunc("POST /v1/executors/{user}/exec", s.forUser(s.ownAccount(s.inEnv(s.exec))))
	if s.Terminals != nil {
		m.HandleFunc("POST /v1/executors/{user}/terminals", s.forUser(s.ownAccount(s.inEnv(s.spawnTerminal))))
		m.HandleFunc("GET /v1/executors/{user}/terminals", s.forUser(s.ownAccount(s.inEnv(s.listTerminals))))
		m.HandleFunc("GET /v1/executors/{user}/terminals/{id}/attach", s.forUser(s.ownAccount(s.inEnv(s.attachTerminal))))
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
	if s.ledger() != nil {
		m.HandleFunc("GET /v1/usage", s.queryUsage) // modelusage.go
	}
	if s.Broker != nil && s.Events != nil && s.Store != nil {
		m.HandleFunc("POST /v1/executors/{user}/prompt", s.forUser(s.prompt))
		m.HandleFunc("POST /v1/executors/{user}/prewarm", s.forUser(s.prewarmRoute))
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
