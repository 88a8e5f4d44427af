package api

import (
	"net/http"
	"strconv"
	"sync"
)

// metrics counts requests by route and status for /v1/metrics.
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]int64 // route pattern, status code
	limited  int64
	tasks    map[string]int64 // ended tasks by status
	// rawStreams counts raw terminal streams by how they were carried:
	// "handoff" (the executor serves the client's connection) or "relay".
	rawStreams map[string]int64
	// prewarms counts pre-warms by outcome: started, refused (by the
	// executor or the daemon), claimed (a new session took its id).
	prewarms map[string]int64
}

func (m *metrics) rawStream(how string) { m.bump(&m.rawStreams, how) }

func (m *metrics) taskEnded(status string) { m.bump(&m.tasks, status) }

func (m *metrics) prewarm(outcome string) { m.bump(&m.prewarms, outcome) }

// bump adds one to key in *counts, made on first use.
func (m *metrics) bump(counts *map[string]int64, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *counts == nil {
		*counts = map[string]int64{}
	}
	(*counts)[key]++
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (m *metrics) count(route string, code int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.requests == nil {
		m.requests = map[[2]string]int64{}
	}
	if code == http.StatusTooManyRequests && route == "limited" {
		m.limited++
		return
	}
	m.requests[[2]string{route, strconv.Itoa(code)}]++
}
