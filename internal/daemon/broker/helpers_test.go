package broker

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Secrets the tests store; the audit trail must never contain them.
const (
	aliceKey  = "sk-ant-alice-0123456789-secret"
	daemonKey = "sk-openai-daemon-9876543210-secret"
)

var discard = slog.New(slog.DiscardHandler)

// uids are the test accounts' uids.
var uids = map[string]uint32{"alice": 1000, "bob": 1001}

// env is a broker with real token, credential, event and audit parts.
type env struct {
	b         *Broker
	tokens    *token.Service
	mem       *events.MemoryStore
	sink      *events.Sink
	audit     *audit.Logger
	auditPath string
}

type envOpts struct {
	limits  Limits
	ttl     time.Duration
	maxUses int
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	if o.ttl == 0 {
		o.ttl = time.Hour
	}
	if o.maxUses == 0 {
		o.maxUses = 1_000_000
	}
	dir := t.TempDir()
	store, err := credstore.Open(filepath.Join(dir, "creds.json"), make([]byte, credstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	must(t, store.Set(credstore.User("alice", uids["alice"]), "ANTHROPIC_API_KEY", aliceKey))
	must(t, store.Set(credstore.Daemon, "OPENAI_API_KEY", daemonKey))
	e := &env{tokens: token.New(o.ttl, o.maxUses), mem: &events.MemoryStore{}, auditPath: filepath.Join(dir, "audit.jsonl")}
	e.sink = events.NewSink(e.mem, discard)
	e.audit, err = audit.Open(audit.Options{Path: e.auditPath, Log: discard, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.audit.Close() })
	e.b = New(Config{Tokens: e.tokens, Keys: store, Sink: e.sink, Audit: e.audit, Limits: o.limits, Log: discard})
	return e
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// start issues a token for user's task through StartTask.
func (e *env) start(t testing.TB, user, task string, mode Mode) string {
	t.Helper()
	tok, err := e.b.StartTask(token.Binding{User: user, Session: "s-" + task, Task: task, UID: uids[user]}, mode, "")
	must(t, err)
	return tok
}

// executor connects a fake executor of user to the broker over a Unix
// socketpair and returns the executor's end, which calls the daemon.
func (e *env) executor(t testing.TB, user string) *rpc.Conn {
	t.Helper()
	// A high in-flight bound so a flood reaches the broker's own limiter
	// instead of being cut off by the connection first.
	_, exec := rpctest.Pair(t, e.b.Handler(user), nil, rpc.Options{MaxInFlight: 20_000, QueueLen: 20_000, Logger: discard}, rpc.Options{Logger: discard})
	return exec
}

func getKey(ctx context.Context, c *rpc.Conn, tok, name string) (string, error) {
	var res struct {
		APIKey string `json:"api_key"`
	}
	err := c.Call(ctx, protocol.MethodGetAPIKey, map[string]any{"session_token": tok, "credential_key": name}, &res)
	return res.APIKey, err
}

// wantRPC checks err is an rpc error with code and reason (code 0: no error).
func wantRPC(t testing.TB, err error, code int, reason string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != code || (reason != "" && re.Reason() != reason) {
		t.Fatalf("err = %v (reason %q), want code %d reason %q", err, reasonOf(err), code, reason)
	}
}

func reasonOf(err error) string {
	var re *rpc.Error
	if errors.As(err, &re) {
		return re.Reason()
	}
	return ""
}

// waitFor polls cond for up to 5 s: notifications have no reply to wait on.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
