package api

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// upgradedBackend is alice's executor after a package upgrade: its first
// process runs the old binary (revision 0, pid 100), and each process
// after a shutdown runs the installed one (pid 101, ...).
type upgradedBackend struct {
	executorunit.Backend // unused methods
	mu                   sync.Mutex
	gen                  int // processes started before the running one
	terminals            int // the old process's open terminals
	shutdowns            int
	old                  int // the old binary's revision (0 unless set)
}

func (b *upgradedBackend) Ensure(_ context.Context, user string) (executorunit.Executor, error) {
	b.mu.Lock()
	ping := protocol.PingResult{Pong: true, User: user, UID: alice, PID: 100 + b.gen, Version: "0.1.1", Protocol: protocol.Revision}
	if b.gen == 0 {
		ping.Version, ping.Protocol = "0.0.9", b.old
	}
	terms := make([]protocol.TerminalInfo, b.terminals*(1-min(b.gen, 1)))
	b.mu.Unlock()
	mux := rpc.NewMux()
	mux.Register(protocol.MethodPing, rpc.Method(func(context.Context, protocol.PingParams) (protocol.PingResult, error) { return ping, nil }))
	mux.Register(protocol.MethodListTerminals, func(context.Context, *rpc.Request) (any, error) {
		return protocol.ListTerminalsResult{Terminals: terms}, nil
	})
	dial := func(context.Context) (net.Conn, error) {
		ours, theirs := net.Pipe()
		mux.Register(protocol.MethodShutdown, func(context.Context, *rpc.Request) (any, error) {
			b.mu.Lock()
			b.gen++
			b.shutdowns++
			b.mu.Unlock()
			go theirs.Close() // the process exits after answering
			return struct{}{}, nil
		})
		go func() { _ = rpc.NewConn(theirs, mux, rpc.Options{}).Serve(context.Background()) }()
		return ours, nil
	}
	return executorunit.Executor{User: user, UID: alice, Dial: dial}, nil
}

type signedGateway struct{ *meter.Signer }

func (signedGateway) Admit(string) error                         { return nil }
func (signedGateway) Standings(string) ([]meter.Standing, error) { return nil, nil }
func (signedGateway) Currency() string                           { return "USD" }

// replaceRig has alice's prompt task t1 running, with the gateway on, on
// an executor left on its old binary; others are more running tasks.
func replaceRig(t *testing.T, b *upgradedBackend, others ...string) (*Server, store.Session) {
	t.Helper()
	e := newAccountsEnv(t, users{"alice": alice})
	p := &pool.Pool{Backend: b}
	t.Cleanup(p.Close)
	e.srv.Pool = p
	e.srv.Gateway = signedGateway{meter.NewSigner([]byte("0123456789abcdef0123456789abcdef"))}
	sess, err := e.db.CreateSession(store.Session{ID: "s1", UnixUser: "alice", UID: alice, AgenticTool: "claude-code", Status: "running"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]string{"t1"}, others...) {
		if _, err := e.db.CreateTask(store.Task{ID: id, SessionID: sess.ID, UnixUser: "alice", UID: alice, Prompt: "p", Status: store.Running}); err != nil {
			t.Fatal(err)
		}
	}
	return e.srv, sess
}

// An idle executor on a binary from before the gateway is replaced by the
// installed one, and the prompt goes on with a credential; so is one from
// after the gateway but before its door (revision 3), which would put
// the task's credential in its agent's environment.
func TestOldIdleExecutorReplaced(t *testing.T) {
	for _, old := range []int{0, protocol.RevisionPrewarm} {
		b := &upgradedBackend{old: old}
		srv, sess := replaceRig(t, b)
		tok, err := srv.gatewayToken(context.Background(), "alice", "t1", "claude-code", sess)
		if err != nil || tok == "" || b.shutdowns != 1 {
			t.Fatalf("revision %d: token %q, err %v, %d shutdowns; want a token after one shutdown", old, tok, err, b.shutdowns)
		}
	}
}

// An old executor holding work keeps it: the prompt is refused, naming
// the work, the versions and the way out.
func TestOldBusyExecutorKept(t *testing.T) {
	for name, tc := range map[string]struct {
		b      *upgradedBackend
		others []string
		says   string
	}{
		"terminal": {&upgradedBackend{terminals: 2}, nil, "has 2 terminal(s) open"},
		"task":     {&upgradedBackend{}, []string{"t0"}, "runs task t0"},
	} {
		srv, sess := replaceRig(t, tc.b, tc.others...)
		_, err := srv.gatewayToken(context.Background(), "alice", "t1", "claude-code", sess)
		if err == nil || tc.b.shutdowns != 0 {
			t.Fatalf("%s: err %v, %d shutdowns; want refused, none", name, err, tc.b.shutdowns)
		}
		for _, want := range []string{tc.says, "0.0.9", "protocol revision 0", "needs 4", "agorctl executors stop alice"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", name, err, want)
			}
		}
	}
}

func (signedGateway) Direct(string) bool { return false }
