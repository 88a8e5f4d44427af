package api

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/termcarry"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// spawnTerminal starts a shell in user's executor: {cwd, shell, env, cols, rows}.
func (s *Server) spawnTerminal(w http.ResponseWriter, r *http.Request) {
	var p protocol.SpawnTerminalParams
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&p); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	var err error
	if p.Sandbox, err = s.sandboxLevel(p.Sandbox, p.Cwd); err != nil {
		writeError(w, err)
		return
	}
	var res protocol.SpawnTerminalResult
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	if err := s.Pool.Call(r.Context(), executor, protocol.MethodSpawnTerminal, p, &res); err != nil {
		writeError(w, err)
		return
	}
	s.sandboxApplied(audit.Record{User: person, Sandbox: p.Sandbox}, res.Sandbox)
	if s.SharedAccount != "" {
		s.Terminals.own(res.TerminalID, person)
	}
	s.log().Info("terminal spawned", "user", person, "terminal", res.TerminalID, "pid", res.PID)
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listTerminals(w http.ResponseWriter, r *http.Request) {
	var res protocol.ListTerminalsResult
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	if err := s.Pool.Call(r.Context(), executor, protocol.MethodListTerminals, struct{}{}, &res); err != nil {
		writeError(w, err)
		return
	}
	if s.SharedAccount != "" {
		res.Terminals = slices.DeleteFunc(res.Terminals, func(i protocol.TerminalInfo) bool { return !s.Terminals.mine(i.TerminalID, person) })
	}
	writeJSON(w, http.StatusOK, res)
}

// attachTerminal upgrades the request to a two-way stream for one
// terminal of user's, carried by termcarry: raw frames (Upgrade:
// agor-terminal-raw, see rawTerminal) or, for an executor that dialled
// back or a client that asks for it, NDJSON Frames (Upgrade:
// agor-terminal).
func (s *Server) attachTerminal(w http.ResponseWriter, r *http.Request) {
	sj, id := subjectOf(r), r.PathValue("id")
	person := sj.Person
	user := sj.Executor
	upgrade := r.Header.Get("Upgrade")
	if upgrade != termcarry.DialBackUpgrade && upgrade != rawframe.Upgrade {
		writeError(w, rpc.InvalidParams("Upgrade", `must be "agor-terminal-raw" or "agor-terminal"`))
		return
	}
	if s.SharedAccount != "" && !s.Terminals.mine(id, person) {
		writeError(w, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no terminal %q of %s", id, person))
		return
	}
	client, release, err := s.Pool.Acquire(r.Context(), user)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	a := termcarry.Attach{Hub: &s.Terminals.Hub, Exe: client, User: user, ID: id, Log: s.log()}
	if upgrade == rawframe.Upgrade && s.Pool.RawCapable(user) {
		s.rawTerminal(w, r, a)
		return
	} // else the dial-back stream, which the client follows by its Upgrade answer
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, err)
		return
	}
	defer conn.Close()
	a.ServeDialBack(r.Context(), conn, rw)
}
