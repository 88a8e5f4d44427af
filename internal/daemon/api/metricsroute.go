package api

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
)

// serveMetrics writes the Prometheus text format. The series labelled by
// user are an admin's to see; anyone else sees their own and the host's
// totals.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.metrics.mu.Lock()
	keys := make([][2]string, 0, len(s.metrics.requests))
	for k := range s.metrics.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	fmt.Fprintln(w, "# HELP agor_api_requests_total API requests by route and status.\n# TYPE agor_api_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "agor_api_requests_total{route=%q,code=%q} %d\n", k[0], k[1], s.metrics.requests[k])
	}
	fmt.Fprintln(w, "# HELP agor_tasks_total Tasks ended, by status.\n# TYPE agor_tasks_total counter")
	for _, st := range slices.Sorted(maps.Keys(s.metrics.tasks)) {
		fmt.Fprintf(w, "agor_tasks_total{status=%q} %d\n", st, s.metrics.tasks[st])
	}
	fmt.Fprintln(w, "# HELP agor_terminal_raw_streams_total Raw terminal streams, by path: handoff (the executor serves the client's connection) or relay (through the daemon).\n# TYPE agor_terminal_raw_streams_total counter")
	for _, how := range []string{"handoff", "relay"} {
		fmt.Fprintf(w, "agor_terminal_raw_streams_total{path=%q} %d\n", how, s.metrics.rawStreams[how])
	}
	fmt.Fprintln(w, "# HELP agor_prewarm_total Agents pre-warmed ahead of a prompt, by outcome: started, refused, claimed (a new session took the reserved id).\n# TYPE agor_prewarm_total counter")
	for _, o := range []string{"started", "refused", "claimed"} {
		fmt.Fprintf(w, "agor_prewarm_total{outcome=%q} %d\n", o, s.metrics.prewarms[o])
	}
	fmt.Fprintf(w, "# HELP agor_api_rate_limited_total API requests refused by the per-caller limit.\n# TYPE agor_api_rate_limited_total counter\nagor_api_rate_limited_total %d\n", s.metrics.limited)
	s.metrics.mu.Unlock()
	s.Retained.write(w)
	s.writeStorageMetrics(w)
	fmt.Fprintf(w, "# HELP agor_executors_connected Executors the daemon holds a connection to.\n# TYPE agor_executors_connected gauge\nagor_executors_connected %d\n", len(s.Pool.Live()))
	s.writeUsageMetrics(r.Context(), w, s.caller(r)) // usage.go: per-user series, the caller's own unless an admin
	s.writeEgressMetrics(w, s.caller(r))             // network.go: likewise
	s.writeModelMetrics(w, s.caller(r))              // modelusage.go: likewise, this month's
	if s.Broker != nil {
		st := s.Broker.Stats()
		for _, c := range []struct {
			name, help string
			v          int64
		}{
			{"agor_api_keys_issued_total", "API keys handed to agents.", st.KeysIssued},
			{"agor_token_refusals_total", "Executor requests refused for their session token.", st.TokenRefused},
			{"agor_executor_requests_throttled_total", "Executor requests refused by the per-executor rate limit.", st.Throttled},
			{"agor_events_stored_total", "Agent events stored.", st.EventsStored},
			{"agor_events_duplicate_total", "Agent events received twice and stored once.", st.EventsDuplicate},
			{"agor_events_dropped_total", "Agent events refused (bad token or event).", st.EventsDropped},
		} {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v)
		}
	}
}

// writeStorageMetrics shows the store's filesystem: an operator alerts on
// agor_store_full, or on the free bytes nearing the floor.
func (s *Server) writeStorageMetrics(w io.Writer) {
	if s.Store == nil {
		return
	}
	sp := s.Store.Space()
	full := 0
	if sp.Full {
		full = 1
	}
	for _, m := range []struct {
		name, kind, help string
		v                int64
	}{
		{"agor_store_full", "gauge", "1 while the store cannot write for want of space or its state directory is below store.min_free_bytes: new tasks are refused (storage_full).", int64(full)},
		{"agor_store_free_bytes", "gauge", "Bytes free on the state directory's filesystem (-1: unknown).", sp.Free},
		{"agor_store_min_free_bytes", "gauge", "store.min_free_bytes: below it new tasks are refused, below half of it events are not stored.", sp.Floor},
		{"agor_store_full_episodes_total", "counter", "Times the store began to be full.", sp.Episodes},
		{"agor_store_write_failures_total", "counter", "Store writes refused for want of space.", sp.Failures},
		{"agor_store_pending_statuses", "gauge", "Task and session statuses kept in memory until the store can write them.", int64(sp.Pending)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s{state_dir=%q} %d\n", m.name, m.help, m.name, m.kind, m.name, sp.Dir, m.v)
	}
}
