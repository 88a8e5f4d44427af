package api

import (
	"net/http"
	"slices"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// health answers that the daemon serves, and, when it keeps a store,
// the state of its filesystem (agorctl doctor reports it).
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	h := apiwire.Health{Status: "ok", Version: version.Version}
	if s.Store != nil {
		h.Storage = storageView(s.Store.Space())
	}
	writeJSON(w, http.StatusOK, h)
}

func storageView(sp store.Space) *apiwire.Storage {
	v := &apiwire.Storage{State: "ok", StateDir: sp.Dir, FreeBytes: sp.Free, MinFreeBytes: sp.Floor,
		Episodes: sp.Episodes, Pending: sp.Pending, Reason: sp.Reason}
	if sp.Full {
		v.State, v.Since = "full", &sp.Since
	}
	return v
}

// ExecutorInfo is an executor as the API shows it.
type ExecutorInfo = apiwire.ExecutorInfo

// listExecutors lists the units with, for running ones, their usage. A
// backend that cannot read usage still lists (the error is logged).
// Admins see everyone's; a person sees her own executor only, listed
// (stopped) even before its unit was ever loaded.
func (s *Server) listExecutors(w http.ResponseWriter, r *http.Request) {
	list, err := s.Backend.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	list = s.executorsSeen(s.caller(r), list)
	usage := s.usage(r.Context(), list)
	live := s.Pool.Live()
	out := make([]ExecutorInfo, 0, len(list))
	for _, st := range list {
		out = append(out, ExecutorInfo{User: st.User, Socket: st.Socket, Service: st.Service, Connected: slices.Contains(live, st.User), Usage: usage[st.User],
			Network: s.networkOf(r.Context(), st.User), JobID: st.JobID, Node: st.Node, JobState: st.JobState})
	}
	writeJSON(w, http.StatusOK, apiwire.ExecutorList{Executors: out})
}

// ensureExecutor starts the subject's executor when need be and answers
// with a ping made now: the connection's first ping is as old as the
// connection, and a person asking whether her executor is up wants to know
// it is now.
func (s *Server) ensureExecutor(w http.ResponseWriter, r *http.Request) {
	name := subjectOf(r).Executor
	_, ping, err := s.Pool.Get(r.Context(), name)
	if err == nil {
		err = s.Pool.Call(r.Context(), name, protocol.MethodPing, nil, &ping)
	}
	if err != nil {
		s.log().Warn("executor refused", "user", name, "err", err)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ExecutorInfo{User: name, Connected: true, Ping: &ping})
}

func (s *Server) stopExecutor(w http.ResponseWriter, r *http.Request) {
	name := s.executorOf(r.PathValue("user"))
	if err := account.ValidName(name); err != nil {
		writeError(w, rpc.InvalidParams("user", err.Error()))
		return
	}
	if err := s.Backend.Stop(r.Context(), name); err != nil {
		writeError(w, err)
		return
	}
	s.log().Info("executor stopped: "+name, "user", name, "by", s.caller(r).user.Name)
	writeJSON(w, http.StatusOK, apiwire.ExecutorStopped{User: name, Stopped: true})
}
