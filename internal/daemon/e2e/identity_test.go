package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// TestUnknownCallerRefused: a caller whose uid has no account (a real
// process as uid 4242424, known by SO_PEERCRED) gets 403 unknown_caller
// from every route, and nothing of anyone's: before, it was the user ""
// that the session list and the audit query took for "everyone".
func TestUnknownCallerRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as an account-less uid")
	}
	h := start(t)
	name, _ := target(t)
	code, out := h.do(t, "POST", "/v1/sessions", map[string]any{"unix_user": name, "agentic_tool": "claude-code", "cwd": "."})
	sid, _ := out["id"].(string)
	if code != 201 && code != 200 || sid == "" {
		t.Fatalf("create a session: %d %v", code, out)
	}
	if code, _ := h.do(t, "PUT", "/v1/credentials/ANTHROPIC_API_KEY", map[string]any{"value": "sk-secret-1"}); code != 200 {
		t.Fatalf("set a key: %d", code)
	}
	routes := []string{
		"GET /v1/health", "GET /v1/metrics", "GET /v1/executors", "PUT /v1/executors/" + name, "DELETE /v1/executors/" + name,
		"POST /v1/executors/" + name + "/exec", "POST /v1/executors/" + name + "/terminals", "GET /v1/executors/" + name + "/terminals",
		"PUT /v1/credentials/X_KEY", "DELETE /v1/credentials/ANTHROPIC_API_KEY", "GET /v1/audit", "GET /v1/audit?user=" + name,
		"POST /v1/executors/" + name + "/prompt", "POST /v1/sessions/" + sid + "/prompt", "GET /v1/sessions", "GET /v1/sessions?user=" + name,
		"POST /v1/sessions", "GET /v1/sessions/" + sid + "/tasks", "GET /v1/tasks/x", "GET /v1/tasks/x/events", "POST /v1/tasks/x/stop",
		"GET /v1/permissions", "POST /v1/permissions/x", "GET /v1/executors/" + name + "/files", "GET /v1/accounts/orphans",
	}
	answers := h.requestsAs(t, 4242424, routes)
	for i, route := range routes {
		got := answers[i]
		status, body, _ := strings.Cut(got, " ")
		var e struct{ Error struct{ Reason string } }
		_ = json.Unmarshal([]byte(body), &e)
		if status != "403" || e.Error.Reason != "unknown_caller" {
			t.Errorf("%s as uid 4242424: %s %s, want 403 unknown_caller", route, status, body)
		}
		if strings.Contains(body, sid) || strings.Contains(body, name) && !strings.Contains(route, name) {
			t.Errorf("%s as uid 4242424 shows someone's data: %s", route, body)
		}
	}
	// Nothing changed on their behalf.
	if code, out := h.do(t, "GET", "/v1/audit?action=credential_deleted", nil); code != 200 || strings.Contains(fmt.Sprint(out["records"]), "ANTHROPIC_API_KEY") {
		t.Errorf("audit after the refusals: %d %v", code, out)
	}
}

// TestSharedAccount: with run_as_unix_user false, two people's commands
// both run as the one executor_unix_user, their sessions stay theirs, and
// a person outside the allowed list is refused before anything is stored.
func TestSharedAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act for other users")
	}
	shared, _ := target(t)
	h := startWith(t, nil, func(c *config.Config) {
		c.Execution.RunAsUnixUser = false
		c.Execution.ExecutorUnixUser = shared
		c.Execution.AllowedUsers = []string{"daemon", "bin"}
	})
	for _, person := range []string{"daemon", "bin"} {
		code, out := h.do(t, "POST", "/v1/executors/"+person+"/exec", map[string]any{"argv": []string{"id", "-un"}, "cwd": "."})
		if code != 200 || out["stdout"] != shared+"\n" {
			t.Fatalf("exec for %s: %d %v, want it run as %s", person, code, out, shared)
		}
		code, out = h.do(t, "POST", "/v1/sessions", map[string]any{"unix_user": person, "agentic_tool": "claude-code", "cwd": "."})
		if code != 201 && code != 200 || out["unix_user"] != person {
			t.Fatalf("session for %s: %d %v", person, code, out)
		}
	}
	code, out := h.do(t, "POST", "/v1/sessions", map[string]any{"unix_user": "sys", "agentic_tool": "claude-code", "cwd": "."})
	if code != 503 || !strings.Contains(fmt.Sprint(out), "user_not_allowed") {
		t.Fatalf("session for a person not allowed: %d %v", code, out)
	}
	if _, out = h.do(t, "GET", "/v1/sessions?user=sys", nil); strings.Contains(fmt.Sprint(out), "sys") {
		t.Fatalf("a refused person's session was stored: %v", out)
	}
}
