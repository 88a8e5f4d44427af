package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// users is a user database in a map, name -> uid (each its own group).
type users map[string]uint32

func (u users) source() identity.Table { return identity.Users(u) }

// accountsEnv is the API over a real store, credential store and audit
// trail, with the accounts of a users map.
type accountsEnv struct {
	srv   *Server
	h     http.Handler
	db    *store.DB
	creds *credstore.Store
	audit *audit.Logger
}

func newAccountsEnv(t *testing.T, u users) *accountsEnv {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "agor.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	creds, err := credstore.Open(filepath.Join(dir, "credentials.json"), make([]byte, credstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	al, err := audit.Open(audit.Options{Log: discard, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = al.Close() })
	sink := events.NewSink(db, discard)
	b := broker.New(broker.Config{Tokens: token.New(time.Hour, 100), Keys: creds, Sink: sink, Audit: al, Log: discard})
	srv := &Server{Store: db, Creds: creds, Audit: al, Events: sink, Broker: b, Accounts: identity.New(u.source()), Log: discard}
	return &accountsEnv{srv: srv, h: srv.Handler(), db: db, creds: creds, audit: al}
}

// as makes a request as uid (known by its peer credentials).
func (e *accountsEnv) as(t *testing.T, uid uint32, method, path, body string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, "http://agor"+path, strings.NewReader(body))
	r = r.WithContext(peer.NewContext(r.Context(), peer.Cred{UID: uid, GID: uid}))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	var out map[string]any
	if ct := w.Header().Get("Content-Type"); ct == "application/json" {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %q: %v", method, path, w.Body, err)
		}
	} else {
		out = map[string]any{"body": w.Body.String()}
	}
	return w.Code, out
}

// accounts replaces the user database (a fresh resolver: no cached answers).
func (e *accountsEnv) accounts(u users) { e.srv.Accounts = identity.New(u.source()) }

const (
	oldAlice = 1000
	newAlice = 2000
)

// TestAccountReuse: alice (uid 1000) has a session, a finished task with
// its events, a running task and a key; her account is deleted and the
// name given to someone else (uid 2000). The new alice sees and uses
// none of it; an admin sees it but may not run it as the new alice; each
// refusal is audited naming both uids.
func TestAccountReuse(t *testing.T) {
	e := newAccountsEnv(t, users{"root": 0, "alice": oldAlice})
	code, out := e.as(t, oldAlice, "POST", "/v1/sessions", `{"agentic_tool":"claude-code","cwd":"."}`)
	sid, _ := out["id"].(string)
	if code != http.StatusCreated || sid == "" {
		t.Fatalf("create session: %d %v", code, out)
	}
	for _, tk := range []store.Task{
		{ID: "t-done", SessionID: sid, UnixUser: "alice", UID: oldAlice, Prompt: "old secrets", Status: store.Completed},
		{ID: "t-run", SessionID: sid, UnixUser: "alice", UID: oldAlice, Prompt: "still running", Status: store.Running},
	} {
		if _, err := e.db.CreateTask(tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.AppendBatch([]apiwire.StoredEvent{{TaskID: "t-done", Sequence: 0, Type: "text", Data: json.RawMessage(`{"text":"old"}`)}}); err != nil {
		t.Fatal(err)
	}
	if code, out := e.as(t, oldAlice, "PUT", "/v1/credentials/ANTHROPIC_API_KEY", `{"value":"sk-old-alice"}`); code != 200 {
		t.Fatalf("set key: %d %v", code, out)
	}
	// Before the reuse, all of it is alice's.
	for _, path := range []string{"/v1/sessions/" + sid + "/tasks", "/v1/tasks/t-done", "/v1/tasks/t-done/events"} {
		if code, out := e.as(t, oldAlice, "GET", path, ""); code != 200 {
			t.Fatalf("alice GET %s: %d %v", path, code, out)
		}
	}
	if n := sessionsSeen(t, e, oldAlice, ""); n != 1 {
		t.Fatalf("alice sees %d sessions, want 1", n)
	}

	e.accounts(users{"root": 0, "alice": newAlice})
	if n := sessionsSeen(t, e, newAlice, ""); n != 0 {
		t.Errorf("the new alice sees %d sessions", n)
	}
	refused := []struct{ method, path, body string }{
		{"GET", "/v1/sessions/" + sid + "/tasks", ""},
		{"GET", "/v1/tasks/t-done", ""},
		{"GET", "/v1/tasks/t-done/events", ""},
		{"POST", "/v1/sessions/" + sid + "/prompt", `{"prompt":"hi"}`},
		{"POST", "/v1/executors/alice/prompt", `{"prompt":"hi","session_id":"` + sid + `"}`},
		{"POST", "/v1/tasks/t-run/stop", ""},
		{"DELETE", "/v1/credentials/ANTHROPIC_API_KEY", ""},
	}
	for _, r := range refused {
		code, out := e.as(t, newAlice, r.method, r.path, r.body)
		if code != http.StatusNotFound || strings.Contains(fmt.Sprint(out), "old secrets") {
			t.Errorf("new alice %s %s: %d %v, want 404", r.method, r.path, code, out)
		}
	}
	// An admin sees the orphan, but may not prompt or stop it as the new alice.
	if n := sessionsSeen(t, e, 0, "?user=alice"); n != 1 {
		t.Errorf("admin sees %d of alice's sessions, want 1", n)
	}
	if code, _ := e.as(t, 0, "GET", "/v1/tasks/t-done/events", ""); code != 200 {
		t.Errorf("admin GET events: %d", code)
	}
	for _, r := range refused[3:6] {
		if code, out := e.as(t, 0, r.method, r.path, r.body); code != http.StatusNotFound {
			t.Errorf("admin %s %s: %d %v, want 404", r.method, r.path, code, out)
		}
	}

	must(t, e.audit.Flush()) // the list's refusal is aggregated: one record a window
	mismatches := e.audit.Query(audit.Filter{Action: audit.AccountMismatch})
	if len(mismatches) != len(refused)+3+1 {
		t.Errorf("%d account_mismatch records, want %d: %+v", len(mismatches), len(refused)+3+1, mismatches)
	}
	for _, r := range mismatches {
		if r.User != "alice" || r.UID != audit.UIDOf(newAlice) || r.StoredUID != audit.UIDOf(oldAlice) {
			t.Errorf("record %+v: want alice, uid %d, stored uid %d", r, newAlice, oldAlice)
		}
	}
	// The new alice's audit trail holds nothing of the old one's.
	code, out = e.as(t, newAlice, "GET", "/v1/audit", "")
	if code != 200 || strings.Contains(fmt.Sprint(out), "credential_set") {
		t.Errorf("new alice's audit: %d %v", code, out)
	}
	if k, err := e.creds.Get(credstore.User("alice", newAlice), "ANTHROPIC_API_KEY"); err == nil {
		t.Errorf("the new alice's key lookup found %q", k.Value)
	}
	// Her own things are hers.
	if code, out := e.as(t, newAlice, "POST", "/v1/sessions", `{"agentic_tool":"codex","cwd":"."}`); code != 201 {
		t.Fatalf("new alice creates a session: %d %v", code, out)
	}
	if n := sessionsSeen(t, e, newAlice, ""); n != 1 {
		t.Errorf("the new alice sees %d sessions, want her 1", n)
	}
}

func sessionsSeen(t *testing.T, e *accountsEnv, uid uint32, query string) int {
	t.Helper()
	code, out := e.as(t, uid, "GET", "/v1/sessions"+query, "")
	if code != 200 {
		t.Fatalf("list sessions: %d %v", code, out)
	}
	list, _ := out["sessions"].([]any)
	return len(list)
}

// TestOrphans: an admin lists what accounts that no longer exist left
// (a reused name, a name with no account, data of the previous version
// adopted at start) and purges one; users may not.
func TestOrphans(t *testing.T) {
	e := newAccountsEnv(t, users{"root": 0, "alice": oldAlice, "bob": 1001})
	mk := func(id, user string, uid int64) {
		t.Helper()
		if _, err := e.db.CreateSession(store.Session{ID: id, UnixUser: user, UID: uid, AgenticTool: "codex"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.CreateTask(store.Task{ID: "t-" + id, SessionID: id, UnixUser: user, UID: uid, Status: store.Completed}); err != nil {
			t.Fatal(err)
		}
	}
	mk("s-alice", "alice", oldAlice)
	mk("s-bob", "bob", 1001)
	mk("s-gone", "gone", store.NoUID)
	must(t, e.creds.Set(credstore.User("alice", oldAlice), "OPENAI_API_KEY", "sk-a"))
	must(t, e.creds.Set(credstore.User("bob", 1001), "OPENAI_API_KEY", "sk-b"))

	e.accounts(users{"root": 0, "alice": newAlice, "bob": 1001})
	if code, out := e.as(t, 1001, "GET", "/v1/accounts/orphans", ""); code != http.StatusForbidden {
		t.Fatalf("bob lists orphans: %d %v", code, out)
	}
	cur := uint32(newAlice)
	want := []apiwire.Orphan{
		{Name: "alice", UID: oldAlice, CurrentUID: &cur, Sessions: 1, Tasks: 1, Credentials: []string{"OPENAI_API_KEY"}},
		{Name: "gone", UID: -1, Sessions: 1, Tasks: 1},
	}
	if diff := cmp.Diff(want, orphans(t, e)); diff != "" {
		t.Fatalf("orphans (-want +got):\n%s", diff)
	}
	if code, out := e.as(t, 0, "DELETE", "/v1/accounts/orphans/bob?uid=1001", ""); code != http.StatusBadRequest {
		t.Errorf("purge a live account: %d %v", code, out)
	}
	if code, out := e.as(t, 1001, "DELETE", "/v1/accounts/orphans/alice?uid=1000", ""); code != http.StatusForbidden {
		t.Errorf("bob purges: %d %v", code, out)
	}
	code, out := e.as(t, 0, "DELETE", "/v1/accounts/orphans/alice?uid=1000", "")
	if code != 200 || out["sessions"] != 1.0 || out["tasks"] != 1.0 {
		t.Fatalf("purge: %d %v", code, out)
	}
	if code, _ := e.as(t, 0, "DELETE", "/v1/accounts/orphans/alice?uid=1000", ""); code != http.StatusNotFound {
		t.Errorf("purge again: %d, want 404", code)
	}
	if code, _ := e.as(t, 0, "DELETE", "/v1/accounts/orphans/gone?uid=-1", ""); code != 200 {
		t.Errorf("purge gone: %d", code)
	}
	if got := orphans(t, e); len(got) != 0 {
		t.Errorf("orphans after purge: %+v", got)
	}
	if _, err := e.db.GetSession("s-bob"); err != nil {
		t.Errorf("bob's session after the purges: %v", err)
	}
	if k, err := e.creds.Get(credstore.User("bob", 1001), "OPENAI_API_KEY"); err != nil || k.Value != "sk-b" {
		t.Errorf("bob's key after the purges: %v", err)
	}
	purged := e.audit.Query(audit.Filter{Action: audit.AccountPurged})
	if len(purged) != 2 || purged[0].User != "alice" || purged[0].StoredUID != audit.UIDOf(oldAlice) || purged[0].UID != audit.UIDOf(newAlice) {
		t.Errorf("account_purged records: %+v", purged)
	}
}

func orphans(t *testing.T, e *accountsEnv) []apiwire.Orphan {
	t.Helper()
	r := httptest.NewRequest("GET", "http://agor/v1/accounts/orphans", nil)
	r = r.WithContext(peer.NewContext(r.Context(), peer.Cred{UID: 0}))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("list orphans: %d %s", w.Code, w.Body)
	}
	var l apiwire.OrphanList
	if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Orphans
}

// TestBearerAccountReuse: a token made for alice uid 1000 is refused
// once "alice" is uid 2000, and audited; a line of the previous version
// ("USER HEX") is bound to the name's uid at its first use and refused
// once the name moves on.
func TestBearerAccountReuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api-tokens")
	lines := fmt.Sprintf("alice 1000 %s\nbob %s\ncarol 1002 %s\nmallory x %s\n",
		apiwire.HashToken("tok-alice"), apiwire.HashToken("tok-bob"), apiwire.HashToken("tok-carol"), apiwire.HashToken("tok-mallory"))
	must(t, os.WriteFile(path, []byte(lines), 0o600))
	discard := slog.New(slog.DiscardHandler)
	al, err := audit.Open(audit.Options{Log: discard, Window: time.Hour})
	must(t, err)
	t.Cleanup(func() { _ = al.Close() })
	b := &Bearer{Path: path, Audit: al, Log: discard, Accounts: identity.New(users{"alice": newAlice, "bob": 1001, "carol": 1002, "mallory": 1003}.source())}
	h := b.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := peer.FromContext(r.Context())
		fmt.Fprint(w, c.UID)
	}))
	call := func(tok string) (int, string) {
		r := httptest.NewRequest("GET", "http://agor/v1/health", nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for _, tc := range []struct {
		tok  string
		code int
		body string
	}{
		{"tok-alice", 401, ""}, {"tok-carol", 200, "1002"}, {"tok-bob", 200, "1001"},
		{"tok-mallory", 401, ""}, {"", 401, ""}, {"tok-nobody", 401, ""},
	} {
		code, body := call(tc.tok)
		if code != tc.code || (tc.code == 200 && body != tc.body) {
			t.Errorf("token %q: %d %q, want %d %q", tc.tok, code, body, tc.code, tc.body)
		}
	}
	b.Accounts = identity.New(users{"alice": newAlice, "bob": 3000, "carol": 1002}.source())
	if code, _ := call("tok-bob"); code != 401 {
		t.Errorf("bob's old-format token once bob is uid 3000: %d, want 401", code)
	}
	var got []string
	for _, r := range al.Query(audit.Filter{Action: audit.AccountMismatch}) {
		got = append(got, fmt.Sprintf("%s %s->%s", r.User, r.StoredUID, r.UID))
	}
	if diff := cmp.Diff([]string{"alice 1000->2000", "bob 1001->3000"}, got); diff != "" {
		t.Errorf("account_mismatch records (-want +got):\n%s", diff)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
