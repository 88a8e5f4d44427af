package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// In the shared account exec, files and terminals are off for persons
// unless the operator turned them on; an admin acts for anyone, and a
// person's own account is unaffected.
func TestSharedAccountAccess(t *testing.T) {
	alice := who{user: identity.User{Name: "alice"}}
	for _, tc := range []struct {
		name   string
		s      *Server
		c      who
		served bool
	}{
		{"own accounts", &Server{}, alice, true},
		{"shared, off", &Server{SharedAccount: "agentsvc"}, alice, false},
		{"shared, turned on", &Server{SharedAccount: "agentsvc", SharedAccess: true}, alice, true},
		{"shared, an admin", &Server{SharedAccount: "agentsvc"}, who{user: identity.User{Name: "root"}, admin: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := false
			h := tc.s.ownAccount(func(http.ResponseWriter, *http.Request) { served = true })
			r := httptest.NewRequest(http.MethodPost, "/v1/executors/alice/exec", nil)
			w := httptest.NewRecorder()
			h(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, tc.c)))
			if served != tc.served {
				t.Fatalf("served %v, want %v (%d %s)", served, tc.served, w.Code, w.Body)
			}
			if !served && (w.Code != http.StatusForbidden || bodyReason(t, w.Body.Bytes()) != apiwire.ReasonSharedAccount) {
				t.Errorf("refusal: %d %s, want 403 %s", w.Code, w.Body, apiwire.ReasonSharedAccount)
			}
		})
	}
}

func bodyReason(t *testing.T, b []byte) string {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return reason(out)
}
