package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStartPingsNow: starting an executor that runs already answers with
// a ping made now, not the one its connection began with.
func TestStartPingsNow(t *testing.T) {
	h := start(t)
	name, _ := target(t)
	stamp := func() float64 {
		t.Helper()
		code, out := h.do(t, "PUT", "/v1/executors/"+name, nil)
		ping, _ := out["ping"].(map[string]any)
		ts, _ := ping["timestamp"].(float64)
		if code != 200 || ts == 0 {
			t.Fatalf("start %s: %d %v", name, code, out)
		}
		return ts
	}
	first := stamp()
	time.Sleep(20 * time.Millisecond)
	if again := stamp(); again <= first {
		t.Errorf("a second start answered with ping timestamp %.0f, the first's was %.0f: not a ping made now", again, first)
	}
}

// TestOwnExecutor: a person lists and stops her own executor; other
// people's stay the admins'.
func TestOwnExecutor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to ask as another uid")
	}
	h := start(t)
	name, uid := target(t)
	for _, u := range []string{name, "daemon"} {
		if code, out := h.do(t, "PUT", "/v1/executors/"+u, nil); code != 200 {
			t.Fatalf("start %s: %d %v", u, code, out)
		}
	}
	as := func(route string) (string, map[string]any) {
		t.Helper()
		status, body, _ := strings.Cut(h.requestAs(t, uint32(uid), route), " ")
		var out map[string]any
		_ = json.Unmarshal([]byte(body), &out)
		return status, out
	}
	if status, out := as("GET /v1/whoami"); status != "200" || out["user"] != name || out["uid"] != float64(uid) || out["admin"] != false {
		t.Errorf("GET /v1/whoami as %s: %s %v, want her, not an admin", name, status, out)
	}
	if code, out := h.do(t, "GET", "/v1/whoami", nil); code != 200 || out["user"] != "root" || out["admin"] != true {
		t.Errorf("GET /v1/whoami as root: %d %v, want root, an admin", code, out)
	}
	status, out := as("GET /v1/executors")
	list, _ := out["executors"].([]any)
	if status != "200" || len(list) != 1 || list[0].(map[string]any)["user"] != name {
		t.Fatalf("GET /v1/executors as %s: %s %v, want her executor only", name, status, out)
	}
	if status, out = as("DELETE /v1/executors/daemon"); status != "403" || !strings.Contains(string(mustJSON(out)), "not_yourself") {
		t.Errorf("%s stopping daemon's executor: %s %v, want 403 not_yourself", name, status, out)
	}
	if status, out = as("DELETE /v1/executors/" + name); status != "200" || out["stopped"] != true {
		t.Fatalf("%s stopping her own executor: %s %v", name, status, out)
	}
	status, out = as("GET /v1/executors")
	list, _ = out["executors"].([]any)
	if status != "200" || len(list) != 1 || list[0].(map[string]any)["connected"] == true {
		t.Errorf("after she stopped it: %s %v", status, out)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
