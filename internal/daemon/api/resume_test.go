package api

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// pipeBackend is one executor served in process over a pipe: ping
// answers with ping, resume_task with a completed result (counted).
type pipeBackend struct {
	executorunit.Backend // unused methods
	ping                 protocol.PingResult
	resumed              atomic.Int32
}

func (b *pipeBackend) Ensure(_ context.Context, user string) (executorunit.Executor, error) {
	mux := rpc.NewMux()
	mux.Register(protocol.MethodPing, rpc.Method(func(context.Context, protocol.PingParams) (protocol.PingResult, error) { return b.ping, nil }))
	mux.Register(protocol.MethodResumeTask, func(context.Context, *rpc.Request) (any, error) {
		b.resumed.Add(1)
		return protocol.ExecutePromptResult{Status: protocol.StatusCompleted}, nil
	})
	dial := func(context.Context) (net.Conn, error) {
		ours, theirs := net.Pipe()
		go func() { _ = rpc.NewConn(theirs, mux, rpc.Options{}).Serve(context.Background()) }()
		return ours, nil
	}
	return executorunit.Executor{User: user, UID: alice, Dial: dial}, nil
}

// resumeOne leaves one running task of alice's in the store, as a daemon
// that went would, and has a new daemon take it over from an executor
// that answers ping with ping. It returns the task as then stored and
// how many resume_task calls the executor got.
func resumeOne(t *testing.T, ping protocol.PingResult) (store.Task, int32) {
	t.Helper()
	e := newAccountsEnv(t, users{"alice": alice})
	b := &pipeBackend{ping: ping}
	p := &pool.Pool{Backend: b}
	t.Cleanup(p.Close)
	e.srv.Pool = p
	sess, err := e.db.CreateSession(store.Session{ID: "s1", UnixUser: "alice", UID: alice, AgenticTool: "claude-code", Status: "running"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.db.CreateTask(store.Task{ID: "t1", SessionID: sess.ID, UnixUser: "alice", UID: alice, Prompt: "p", Status: store.Running})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.ResumeTasks([]store.Task{task})
	e.srv.Wait()
	got, err := e.db.GetTask("t1")
	if err != nil {
		t.Fatal(err)
	}
	return got, b.resumed.Load()
}

// An executor of this revision hands its task over.
func TestResumeNegotiatesRevision(t *testing.T) {
	got, n := resumeOne(t, protocol.PingResult{Pong: true, User: "alice", UID: alice, Version: "0.1.1", Protocol: protocol.Revision})
	if got.Status != store.Completed || n != 1 {
		t.Fatalf("task %s (%q), resume_task called %d times; want completed, once", got.Status, got.Error, n)
	}
}

// An executor from before revisions (an upgrade left it on its old
// binary) ended its task with the last daemon: the next one does not ask
// it, and says why in the task's error.
func TestResumeSaysOldExecutorCannot(t *testing.T) {
	got, n := resumeOne(t, protocol.PingResult{Pong: true, User: "alice", UID: alice, Version: "0.0.9"})
	if got.Status != store.Interrupted || n != 0 {
		t.Fatalf("task %s, resume_task called %d times; want interrupted, never", got.Status, n)
	}
	for _, want := range []string{"0.0.9", "protocol revision 0", "needs revision 1"} {
		if !strings.Contains(got.Error, want) {
			t.Errorf("error %q does not say %q", got.Error, want)
		}
	}
}
