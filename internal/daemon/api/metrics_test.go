package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
)

// usageBackend runs alice's and bob's executors, each using some memory.
type usageBackend struct{ executorunit.Backend }

func (usageBackend) List(context.Context) ([]executorunit.Status, error) {
	return []executorunit.Status{{User: "alice", Service: "active"}, {User: "bob", Service: "active"}}, nil
}

func (usageBackend) Usage(_ context.Context, users []string) (map[string]executorunit.Usage, error) {
	out := map[string]executorunit.Usage{}
	for _, u := range users {
		mem := uint64(len(u)) << 20
		out[u] = executorunit.Usage{MemoryBytes: &mem}
	}
	return out, nil
}

// /v1/metrics' per-user series are an admin's: alice sees her own
// executor's usage and not bob's.
func TestMetricsPerUserSeries(t *testing.T) {
	s := &Server{Backend: usageBackend{}, Pool: &pool.Pool{}}
	for _, tc := range []struct {
		name  string
		c     who
		see   []string
		never []string
	}{
		{"alice", who{user: identity.User{Name: "alice"}}, []string{`agor_executor_memory_bytes{user="alice"}`}, []string{`user="bob"`}},
		{"an admin", who{user: identity.User{Name: "root"}, admin: true}, []string{`{user="alice"}`, `{user="bob"}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/metrics", nil)
			r = r.WithContext(context.WithValue(r.Context(), whoKey{}, tc.c))
			w := httptest.NewRecorder()
			s.serveMetrics(w, r)
			body := w.Body.String()
			for _, want := range tc.see {
				if !strings.Contains(body, want) {
					t.Errorf("lacks %s:\n%s", want, body)
				}
			}
			for _, not := range tc.never {
				if strings.Contains(body, not) {
					t.Errorf("shows %s:\n%s", not, body)
				}
			}
		})
	}
}
