package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ResumeTasks takes over the tasks the last daemon left running (it
// restarted, was upgraded or killed): a task belongs to its executor,
// which ran it on meanwhile. Each executor that still has one sends
// what this daemon has not stored and, when the task ends, its result;
// one that does not know it (it was restarted too) leaves it interrupted.
func (s *Server) ResumeTasks(tasks []store.Task) {
	for _, t := range tasks {
		s.background(func(ctx context.Context) { s.resumeTask(ctx, t) })
	}
}

func (s *Server) resumeTask(ctx context.Context, t store.Task) {
	sess, tok, after, err := s.takeOver(t)
	if err != nil {
		s.interrupted(t, sess, err)
		return
	}
	executor := s.taskExecutor(t.UnixUser, t.SessionID)
	var res json.RawMessage
	err = s.resumable(ctx, executor)
	if err == nil {
		p := protocol.ResumeTaskParams{TaskID: t.ID, SessionToken: tok, AfterSequence: after}
		err = s.Pool.Call(ctx, executor, protocol.MethodResumeTask, p, &res)
	}
	if ctx.Err() != nil { // this daemon is stopping too: the next one takes it over
		return
	}
	if err != nil {
		s.Broker.EndTask(t.ID)
		s.interrupted(t, sess, err)
		return
	}
	s.end(t.ID, sess, apiwire.PromptLine{Result: res})
	s.log().Info("task taken over from its executor ended", "task", t.ID, "user", t.UnixUser, "after_sequence", after)
}

// resumable says why executor cannot hand a task over, if it cannot: it
// runs a build from before executors owned their tasks (an upgrade left
// it on its old binary), which ended them with the last daemon.
func (s *Server) resumable(ctx context.Context, executor string) error {
	_, ping, err := s.Pool.Get(ctx, executor)
	if err != nil {
		return err
	}
	if ping.Protocol < protocol.RevisionResume {
		return fmt.Errorf("the executor of %s runs %s (protocol revision %d), which ends its tasks with the daemon; "+
			"taking one over needs revision %d, which its next start has", executor, ping.Version, ping.Protocol, protocol.RevisionResume)
	}
	return nil
}

// takeOver issues a new token for a task the last daemon ran and says
// from which sequence on its events are missing here.
func (s *Server) takeOver(t store.Task) (store.Session, string, int64, error) {
	sess, err := s.Store.GetSession(t.SessionID)
	if err != nil {
		return sess, "", 0, fmt.Errorf("its session: %w", err)
	}
	if t.UID < 0 {
		return sess, "", 0, fmt.Errorf("the uid of %s is not known", t.UnixUser)
	}
	after, err := s.Store.LastSequence(t.ID)
	if err != nil {
		return sess, "", 0, err
	}
	bind := token.Binding{User: s.executorOf(t.UnixUser), Session: sess.ID, Task: t.ID, UID: uint32(t.UID), Tool: sess.AgenticTool}
	if bind.User != t.UnixUser {
		bind.Person = t.UnixUser
	}
	mode := broker.Mode(sess.PermissionMode)
	if mode == "" {
		mode = broker.ModeDefault
	}
	tok, err := s.Broker.StartTask(bind, mode, "")
	if err != nil {
		return sess, "", 0, err
	}
	s.Events.Continue(t.ID, after+1)
	return sess, tok, after, nil
}

// interrupted ends a task that could not be taken over.
func (s *Server) interrupted(t store.Task, sess store.Session, why error) {
	msg := "the daemon restarted and the task's executor no longer runs it"
	if !rpc.IsCode(why, protocol.CodeTaskNotFound) {
		msg = "the daemon restarted and could not take the task over: " + why.Error()
	}
	s.log().Warn("task left running by the last daemon is interrupted", "task", t.ID, "user", t.UnixUser, "err", why)
	if err := s.Store.FinishTask(t.ID, store.Finish{Status: store.Interrupted, Error: msg}); err != nil {
		s.statusNotStored("task", t.ID, err)
	}
	if sess.ID == "" {
		return
	}
	sess.Status = string(store.Interrupted)
	if _, err := s.Store.UpdateSession(sess); err != nil {
		s.statusNotStored("session", sess.ID, err)
	}
}
