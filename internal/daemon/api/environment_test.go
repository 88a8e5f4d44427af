package api

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// envCheck is a stand-in policy: alice may use py, nobody else may; any
// other name has no definition.
func envCheck(_ context.Context, user, env string) error {
	switch {
	case env != "py":
		return fmt.Errorf("%w: %q", executorunit.ErrNoSuchEnvironment, env)
	case user != "alice":
		return fmt.Errorf("%w: %s may not use environment py", executorunit.ErrEnvironmentNotAllowed, user)
	}
	return nil
}

// TestEnvironmentAccess: a session is made in an environment only for a
// person it lists (403 otherwise, 400 for a name with none), records it,
// and keeps it; bob's exec there is refused before any executor is asked
// for (the server has no pool: asking would panic).
func TestEnvironmentAccess(t *testing.T) {
	e := newAccountsEnv(t, users{"root": 0, "alice": 1000, "bob": 1001})
	e.srv.Environments = Environments{Check: envCheck}
	e.srv.Terminals = &Terminals{}
	e.h = e.srv.Handler() // with the terminal routes
	code, out := e.as(t, 1000, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":".","environment":"py"}`)
	if code != 201 || out["environment"] != "py" {
		t.Fatalf("alice's session in py: %d %v", code, out)
	}
	id, _ := out["id"].(string)
	for _, tc := range []struct {
		uid          uint32
		method, path string
		body         string
		code         int
		reason       string
	}{
		{1001, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":".","environment":"py"}`, 403, apiwire.ReasonEnvironmentNotAllowed},
		{1000, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":".","environment":"nope"}`, 400, apiwire.ReasonNoSuchEnvironment},
		{1000, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":".","environment":"../py"}`, 400, "invalid_params"},
		{1001, "POST", "/v1/executors/bob/exec?environment=py", `{"argv":["true"],"cwd":"."}`, 403, apiwire.ReasonEnvironmentNotAllowed},
		{1001, "POST", "/v1/executors/bob/terminals?environment=py", `{"cwd":".","cols":80,"rows":24}`, 403, apiwire.ReasonEnvironmentNotAllowed},
		{1000, "POST", "/v1/sessions/" + id + "/prompt", `{"prompt":"hi","cwd":".","environment":"host"}`, 400, "invalid_params"},
	} {
		code, out := e.as(t, tc.uid, tc.method, tc.path, tc.body)
		if code != tc.code || (reason(out) != tc.reason && tc.reason != "invalid_params") {
			t.Errorf("%d %s %s %s: %d %v, want %d %s", tc.uid, tc.method, tc.path, tc.body, code, out, tc.code, tc.reason)
		}
	}
}

// TestEnvironmentDefault: with a default, a request naming none goes
// there (bob, not listed, is refused), "host" runs on the host.
func TestEnvironmentDefault(t *testing.T) {
	e := newAccountsEnv(t, users{"root": 0, "alice": 1000, "bob": 1001})
	e.srv.Environments = Environments{Check: envCheck, Default: "py"}
	if code, out := e.as(t, 1000, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":"."}`); code != 201 || out["environment"] != "py" {
		t.Errorf("alice's default session: %d %v", code, out)
	}
	if code, out := e.as(t, 1001, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":"."}`); code != 403 || reason(out) != apiwire.ReasonEnvironmentNotAllowed {
		t.Errorf("bob's default session: %d %v", code, out)
	}
	if code, out := e.as(t, 1001, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":".","environment":"host"}`); code != 201 || out["environment"] != nil {
		t.Errorf("bob's host session: %d %v", code, out)
	}
}

// TestWithEnvKey: in an environment the executor key names it, and the
// account (what tokens are bound to) stays the person's.
func TestWithEnvKey(t *testing.T) {
	s := &Server{Environments: Environments{Check: envCheck}}
	sub, err := s.withEnv(context.Background(), subject{Person: "alice", Executor: "alice"}, "py")
	if err != nil || sub.Executor != "alice:py" || sub.account() != "alice" || sub.Env != "py" {
		t.Errorf("withEnv(py) = %+v (account %q), %v", sub, sub.account(), err)
	}
	sub, err = s.withEnv(context.Background(), subject{Person: "alice", Executor: "alice"}, "host")
	if err != nil || sub.Executor != "alice" || sub.Env != "" {
		t.Errorf("withEnv(host) = %+v, %v", sub, err)
	}
	s.SharedAccount = "agent"
	if _, err := s.withEnv(context.Background(), subject{Person: "alice", Executor: "agent"}, "py"); err == nil {
		t.Error("an environment with the shared account was allowed")
	}
}

// TestExecutorsSeenInEnvironments: a person lists her executors on the
// host and in environments, nobody else's; with none on the host hers is
// shown stopped first.
func TestExecutorsSeenInEnvironments(t *testing.T) {
	s := &Server{}
	alice := who{user: identity.User{Name: "alice", UID: 1000}}
	list := []executorunit.Status{{User: "bob:py"}, {User: "alice:py"}, {User: "alice"}, {User: "bob"}}
	var got []string
	for _, st := range s.executorsSeen(alice, list) {
		got = append(got, st.User)
	}
	if want := []string{"alice:py", "alice"}; !slices.Equal(got, want) {
		t.Errorf("alice sees %q, want %q", got, want)
	}
	got = got[:0]
	for _, st := range s.executorsSeen(alice, list[:2]) {
		got = append(got, st.User+"/"+st.Service)
	}
	if want := []string{"alice/inactive", "alice:py/"}; !slices.Equal(got, want) {
		t.Errorf("alice, nothing on the host: %q, want %q", got, want)
	}
}

// TestPrewarmInEnvironment: a pre-warm is routed as its prompt would be:
// refused for a person the environment does not list and for a name
// with no definition, and, for alice in py, to her executor there.
func TestPrewarmInEnvironment(t *testing.T) {
	e := newAccountsEnv(t, users{"root": 0, "alice": 1000, "bob": 1001})
	e.srv.Environments = Environments{Check: envCheck}
	body := `{"agentic_tool":"claude-code","cwd":".","environment":"%s"}`
	if code, out := e.as(t, 1001, "POST", "/v1/executors/bob/prewarm", fmt.Sprintf(body, "py")); code != 403 || reason(out) != apiwire.ReasonEnvironmentNotAllowed {
		t.Errorf("bob's pre-warm in py: %d %v", code, out)
	}
	if code, out := e.as(t, 1000, "POST", "/v1/executors/alice/prewarm", fmt.Sprintf(body, "nope")); code != 400 || reason(out) != apiwire.ReasonNoSuchEnvironment {
		t.Errorf("alice's pre-warm in nope: %d %v", code, out)
	}
	b := apiwire.PromptBody{Tool: "claude-code", Environment: "py"}
	sub, err := e.srv.routeEnv(context.Background(), subject{Person: "alice", UID: 1000, Executor: "alice"}, &b)
	if err != nil || sub.Executor != "alice:py" || b.Environment != "py" {
		t.Errorf("alice's pre-warm in py goes to %+v (body's environment %q), %v", sub, b.Environment, err)
	}
}
