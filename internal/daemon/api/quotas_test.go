package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
)

// The quota tests' people: alice and bob may run work; carol's uid is
// below min_uid, so the policy refuses her.
const (
	alice = 1001
	bob   = 1002
	carol = 500
)

var quotaUsers = users{"alice": alice, "bob": bob, "carol": carol}

// quotaEnv is the API over a real store and credential store, served by
// the real HTTP server on one Unix socket per person: each socket's
// connections are that person's (as SO_PEERCRED would say), counted by
// the real connection limiter.
type quotaEnv struct {
	srv   *Server
	db    *store.DB
	dir   string
	socks map[uint32]string
}

func newQuotaEnv(t *testing.T, q config.Quotas, maxConns int) *quotaEnv {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "agor.db"))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credstore.Open(filepath.Join(dir, "credentials.json"), make([]byte, credstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	al, err := audit.Open(audit.Options{Log: discard, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	resolver := identity.New(quotaUsers.source())
	pol := executorunit.Policy{MinUID: 1000, Accounts: resolver, SocketTemplate: filepath.Join(dir, "{user}.sock")}
	// Tasks fail at once: no executor binary. They are stored all the same.
	p := &pool.Pool{Backend: &executorunit.Direct{Policy: pol, Binary: "/nonexistent", Log: discard}, Timeout: time.Second}
	sink := events.NewSink(db, discard)
	b := broker.New(broker.Config{Tokens: token.New(time.Hour, 100), Keys: creds, Sink: sink, Audit: al, Log: discard})
	srv := &Server{Store: db, Creds: creds, Audit: al, Events: sink, Broker: b, Pool: p, Backend: p.Backend,
		Accounts: resolver, Quotas: q, Log: discard,
		Admit: func(ctx context.Context, person string) (uint32, error) {
			ex, err := pol.Check(ctx, person)
			return uint32(ex.UID), err
		}}
	e := &quotaEnv{srv: srv, db: db, dir: dir, socks: map[uint32]string{}}
	h := srv.Handler()
	for _, uid := range []uint32{alice, bob, carol} {
		sock := filepath.Join(dir, fmt.Sprintf("api-%d.sock", uid))
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		lim := &UIDLimiter{Listener: ln, Max: maxConns, credOf: func(net.Conn) (peer.Cred, error) { return peer.Cred{UID: uid, GID: uid}, nil }}
		hs := NewHTTPServer(h)
		go func() { _ = hs.Serve(lim) }()
		t.Cleanup(func() { hs.Close() })
		e.socks[uid] = sock
	}
	t.Cleanup(func() { srv.Wait(); p.Close(); db.Close(); _ = al.Close() })
	return e
}

func (e *quotaEnv) client(uid uint32) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", e.socks[uid])
	}}}
}

// do makes one request as uid; it returns the status and the JSON body.
func (e *quotaEnv) do(t *testing.T, uid uint32, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = strings.NewReader(string(j))
	}
	req, _ := http.NewRequest(method, "http://agor"+path, r)
	resp, err := e.client(uid).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// refused checks a refusal's status, reason, and that its message names
// the quota's key and value.
func refused(t *testing.T, what string, code int, out map[string]any, wantCode int, wantReason, wantMsg string) {
	t.Helper()
	e, _ := out["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if code != wantCode || reason(out) != wantReason || !strings.Contains(msg, wantMsg) {
		t.Fatalf("%s: %d %v, want %d %s naming %q", what, code, out, wantCode, wantReason, wantMsg)
	}
}

// storeBytes is the size of agor.db and its WAL.
func (e *quotaEnv) storeBytes() int64 {
	var n int64
	matches, _ := filepath.Glob(filepath.Join(e.dir, "agor.db*"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func session(tool string) map[string]any { return map[string]any{"agentic_tool": tool, "cwd": "."} }

// TestQuotaSessionsFlood: alice floods session creation from 10
// connections; exactly the quota is stored, the rest are 429 naming the
// limit, and bob still makes his.
func TestQuotaSessionsFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxSessionsPerUser: 5}, 0)
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				code, _ := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[201] != 5 || codes[429] != 45 {
		t.Fatalf("statuses %v, want 5 created and 45 refused", codes)
	}
	code, out := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
	refused(t, "sixth session", code, out, 429, ReasonTooManySessions, "quotas.max_sessions_per_user is 5")
	code, out = e.do(t, alice, "POST", "/v1/executors/alice/prompt", map[string]any{"agentic_tool": "claude-code", "prompt": "hi"})
	refused(t, "a prompt that would make a session", code, out, 429, ReasonTooManySessions, "quotas.max_sessions_per_user is 5")
	if n, _ := e.db.CountSessions("alice", alice); n != 5 {
		t.Fatalf("alice has %d sessions stored", n)
	}
	if code, out := e.do(t, bob, "POST", "/v1/sessions", session("claude-code")); code != 201 {
		t.Fatalf("bob: %d %v", code, out)
	}
}

// TestQuotaTasksFlood: prompts into one session stop at the quota; a new
// session of the same person, and bob, are unaffected.
func TestQuotaTasksFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxTasksPerSession: 3}, 0)
	_, sess := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
	path := "/v1/sessions/" + sess["id"].(string) + "/prompt"
	for i := range 3 {
		if code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": "hi"}); code != 202 {
			t.Fatalf("prompt %d: %d %v", i, code, out)
		}
	}
	for range 10 {
		code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": "hi"})
		refused(t, "prompt past the quota", code, out, 429, ReasonTooManyTasks, "quotas.max_tasks_per_session is 3")
	}
	if n, _ := e.db.CountTasks(sess["id"].(string)); n != 3 {
		t.Fatalf("%d tasks stored", n)
	}
	_, sess2 := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
	if code, out := e.do(t, alice, "POST", "/v1/sessions/"+sess2["id"].(string)+"/prompt", map[string]any{"prompt": "hi"}); code != 202 {
		t.Fatalf("alice's other session: %d %v", code, out)
	}
	_, bs := e.do(t, bob, "POST", "/v1/sessions", session("claude-code"))
	if code, out := e.do(t, bob, "POST", "/v1/sessions/"+bs["id"].(string)+"/prompt", map[string]any{"prompt": "hi"}); code != 202 {
		t.Fatalf("bob: %d %v", code, out)
	}
}

// TestQuotaPromptSizeFlood: 20 prompts of 1 MiB against a 64 KiB quota
// are all 413 naming the limit, none is stored, and the store stays
// small; bob's small prompt goes through.
func TestQuotaPromptSizeFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxPromptBytes: 64 << 10}, 0)
	_, sess := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
	path := "/v1/sessions/" + sess["id"].(string) + "/prompt"
	big := strings.Repeat("x", 1<<20)
	for range 20 {
		code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": big})
		refused(t, "1 MiB prompt", code, out, 413, ReasonPromptTooLarge, "quotas.max_prompt_bytes is 65536")
	}
	code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": strings.Repeat("x", 64<<10+1)})
	refused(t, "one byte over", code, out, 413, ReasonPromptTooLarge, "quotas.max_prompt_bytes is 65536")
	if code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": strings.Repeat("x", 64<<10)}); code != 202 {
		t.Fatalf("a prompt at the quota: %d %v", code, out)
	}
	_, bs := e.do(t, bob, "POST", "/v1/sessions", session("claude-code"))
	if code, out := e.do(t, bob, "POST", "/v1/sessions/"+bs["id"].(string)+"/prompt", map[string]any{"prompt": "hi"}); code != 202 {
		t.Fatalf("bob: %d %v", code, out)
	}
	e.srv.Wait()
	if n := e.storeBytes(); n > 2<<20 {
		t.Fatalf("store is %d bytes after 20 refused 1 MiB prompts", n)
	} else {
		t.Logf("store %d bytes after the flood", n)
	}
}

// TestQuotaStoredBytesFlood: prompts count against a person's stored
// bytes as they are written (the flood: 1 MiB prompts, 40 MB in
// 2 s past a 4 MiB bound, seen only by the hourly sweep): past the bound
// her next prompt is refused 429 naming the quota, nothing more of hers
// is stored, and bob's prompt goes through.
func TestQuotaStoredBytesFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxPromptBytes: 1 << 20, MaxEventBytesPerUser: 4 << 20}, 0)
	_, sess := e.do(t, alice, "POST", "/v1/sessions", session("claude-code"))
	path := "/v1/sessions/" + sess["id"].(string) + "/prompt"
	big := strings.Repeat("x", 1<<20)
	accepted := 0
	for range 40 {
		code, out := e.do(t, alice, "POST", path, map[string]any{"prompt": big})
		if code == 202 {
			accepted++
			continue
		}
		refused(t, "a 1 MiB prompt past 4 MiB", code, out, 429, ReasonStoredBytes, "quotas.max_event_bytes_per_user is 4194304")
	}
	if accepted != 4 {
		t.Errorf("accepted %d prompts of 1 MiB under a 4 MiB bound, want 4", accepted)
	}
	_, bs := e.do(t, bob, "POST", "/v1/sessions", session("claude-code"))
	if code, out := e.do(t, bob, "POST", "/v1/sessions/"+bs["id"].(string)+"/prompt", map[string]any{"prompt": "hi"}); code != 202 {
		t.Fatalf("bob: %d %v", code, out)
	}
	e.srv.Wait()
	if n := e.storeBytes(); n > 16<<20 { // 4 MiB of prompts, twice (database and WAL), and room
		t.Fatalf("store is %d bytes after the flood", n)
	} else {
		t.Logf("store %d bytes after 40 prompts of 1 MiB, %d accepted", n, accepted)
	}
}

// TestQuotaCredentialsFlood: keys past the count are 429, a value past
// the size 413, both naming the limit; replacing a key is not a new one;
// bob keeps his own allowance; carol, whom the policy refuses, gets
// nothing stored.
func TestQuotaCredentialsFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxCredentialsPerUser: 3, MaxCredentialBytes: 1024}, 0)
	for i := range 3 {
		if code, out := e.do(t, alice, "PUT", fmt.Sprintf("/v1/credentials/K%d", i), map[string]any{"value": "v"}); code != 200 {
			t.Fatalf("key %d: %d %v", i, code, out)
		}
	}
	for i := 3; i < 20; i++ {
		code, out := e.do(t, alice, "PUT", fmt.Sprintf("/v1/credentials/K%d", i), map[string]any{"value": "v"})
		refused(t, "key past the count", code, out, 429, ReasonTooManyCredentials, "quotas.max_credentials_per_user is 3")
	}
	if code, out := e.do(t, alice, "PUT", "/v1/credentials/K0", map[string]any{"value": "new"}); code != 200 {
		t.Fatalf("replacing a key: %d %v", code, out)
	}
	code, out := e.do(t, alice, "PUT", "/v1/credentials/K0", map[string]any{"value": strings.Repeat("x", 1025)})
	refused(t, "value past the size", code, out, 413, ReasonCredentialTooLarge, "quotas.max_credential_bytes is 1024")
	code, out = e.do(t, alice, "PUT", "/v1/credentials/K0", map[string]any{"value": strings.Repeat("x", 2<<20)})
	refused(t, "2 MiB value", code, out, 413, ReasonCredentialTooLarge, "quotas.max_credential_bytes is 1024")
	if code, out := e.do(t, bob, "PUT", "/v1/credentials/K9", map[string]any{"value": "v"}); code != 200 {
		t.Fatalf("bob: %d %v", code, out)
	}
	code, out = e.do(t, carol, "PUT", "/v1/credentials/K0", map[string]any{"value": "v"})
	if code != 503 || reason(out) != "user_not_allowed" {
		t.Fatalf("carol (below min_uid): %d %v", code, out)
	}
	if names := e.srv.Creds.Names(credstore.User("carol", carol)); len(names) != 0 {
		t.Fatalf("carol's keys stored: %v", names)
	}
	if names := e.srv.Creds.Names(credstore.User("alice", alice)); len(names) != 3 {
		t.Fatalf("alice's keys: %v", names)
	}
}

// TestPolicyBeforeStoring: a person the policy refuses gets no session
// stored, by either route.
func TestPolicyBeforeStoring(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{}, 0)
	for _, path := range []string{"/v1/sessions", "/v1/executors/carol/prompt"} {
		code, out := e.do(t, carol, "POST", path, map[string]any{"agentic_tool": "claude-code", "prompt": "hi"})
		if code != 503 || reason(out) != "user_not_allowed" {
			t.Fatalf("carol %s: %d %v", path, code, out)
		}
	}
	if n, _ := e.db.CountSessions("carol", carol); n != 0 {
		t.Fatalf("carol has %d sessions stored", n)
	}
}

// openStream opens a following event stream as uid; it returns the
// response (the caller closes its body) once the headers are in.
func (e *quotaEnv) openStream(t *testing.T, uid uint32, task string) *http.Response {
	t.Helper()
	resp, err := e.client(uid).Get("http://agor/v1/tasks/" + task + "/events?follow=1")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// liveTask stores a running task of user (uid) and returns its id.
func (e *quotaEnv) liveTask(t *testing.T, user string, uid uint32) string {
	t.Helper()
	id := newID()
	if _, err := e.db.CreateSession(store.Session{ID: id, UnixUser: user, UID: int64(uid), AgenticTool: "claude-code", Cwd: "."}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.CreateTask(store.Task{ID: id, SessionID: id, UnixUser: user, UID: int64(uid), Prompt: "p", Status: store.Running}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestQuotaEventStreamsFlood: alice's open event streams stop at the
// quota (429 naming it); one closed frees a place; bob's are his own.
func TestQuotaEventStreamsFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{MaxEventStreams: 3}, 0)
	task := e.liveTask(t, "alice", alice)
	var open []*http.Response
	for range 3 {
		resp := e.openStream(t, alice, task)
		if resp.StatusCode != 200 {
			t.Fatalf("stream within the quota: %s", resp.Status)
		}
		open = append(open, resp)
	}
	for range 10 {
		code, out := e.do(t, alice, "GET", "/v1/tasks/"+task+"/events?follow=1", nil)
		refused(t, "stream past the quota", code, out, 429, ReasonTooManyEventStreams, "quotas.max_event_streams_per_user is 3")
	}
	btask := e.liveTask(t, "bob", bob)
	if resp := e.openStream(t, bob, btask); resp.StatusCode != 200 {
		t.Fatalf("bob: %s", resp.Status)
	} else {
		defer resp.Body.Close()
	}
	open[0].Body.Close()
	var st string
	for range 100 { // the server notices the hang-up when it next looks
		resp := e.openStream(t, alice, task)
		st = resp.Status
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st != "200 OK" {
		t.Fatalf("after one closed: %s", st)
	}
	for _, r := range open[1:] {
		r.Body.Close()
	}
}

// TestQuotaConnectionsFlood: alice's connections stop at the cap (429
// at once); bob connects as usual.
func TestQuotaConnectionsFlood(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{}, 4)
	dial := func(uid uint32) net.Conn {
		c, err := net.Dial("unix", e.socks[uid])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range 4 {
		if st := get(t, dial(alice)); st != "404 Not Found" {
			t.Fatalf("within the cap: %s", st)
		}
	}
	for range 20 { // answered at once, before any request: read it
		c := dial(alice)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 429 {
			t.Fatalf("past the cap: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	if st := get(t, dial(bob)); st != "404 Not Found" {
		t.Fatalf("bob: %s", st)
	}
}
