package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// accountRoutes serves what accounts that no longer exist left behind,
// to admins: GET lists it, DELETE purges one account's.
func (s *Server) accountRoutes(m *http.ServeMux) {
	if s.Store == nil && s.Creds == nil {
		return
	}
	m.HandleFunc("GET /v1/accounts/orphans", s.admin(s.listOrphans))
	m.HandleFunc("DELETE /v1/accounts/orphans/{name}", s.admin(s.purgeOrphan))
}

// Adopt gives what the previous version stored without uids (store rows,
// keys) the uid its name has now; names no account has become orphans
// for good. The daemon calls it at start; listing orphans calls it again
// for names the user database did not answer for before. It returns the
// names still waiting for an answer.
func (s *Server) Adopt(ctx context.Context) ([]string, error) {
	pending := map[string]bool{}
	note := func(what string, adopted map[string]uint32, orphaned []string, waiting map[string]error) {
		for name, uid := range adopted {
			s.log().Info("adopted data stored before uids were recorded", "what", what, "user", name, "uid", uid)
		}
		for _, name := range orphaned {
			s.log().Warn("data stored before uids were recorded belongs to no account: an orphan (agorctl accounts orphans)", "what", what, "user", name)
		}
		for name, err := range waiting {
			s.log().Warn("data stored before uids were recorded not adopted yet: the user database did not answer", "what", what, "user", name, "err", err)
			pending[name] = true
		}
	}
	if s.Store != nil {
		a, err := s.Store.Adopt(ctx, s.accounts())
		if err != nil {
			return nil, err
		}
		note("sessions", a.Adopted, a.Orphaned, a.Pending)
	}
	if s.Creds != nil {
		a, err := s.Creds.Adopt(ctx, s.accounts())
		if err != nil {
			return nil, err
		}
		note("credentials", a.Adopted, a.Orphaned, a.Pending)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range pending {
			if !yield(n) {
				return
			}
		}
	}), nil
}

func (s *Server) listOrphans(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Adopt(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	all, err := s.holdings()
	if err != nil {
		writeError(w, err)
		return
	}
	out := []apiwire.Orphan{}
	for _, o := range all {
		cur, err := s.currentUID(r.Context(), o.Name)
		if err != nil {
			writeError(w, err)
			return
		}
		if cur == nil || int64(*cur) != o.UID {
			o.CurrentUID = cur
			out = append(out, o)
		}
	}
	writeJSON(w, http.StatusOK, apiwire.OrphanList{Orphans: out})
}

// holdings is everything stored per (name, uid), sorted.
func (s *Server) holdings() ([]apiwire.Orphan, error) {
	type key struct {
		name string
		uid  int64
	}
	by := map[key]*apiwire.Orphan{}
	get := func(name string, uid int64) *apiwire.Orphan {
		k := key{name, uid}
		if by[k] == nil {
			by[k] = &apiwire.Orphan{Name: name, UID: uid}
		}
		return by[k]
	}
	if s.Store != nil {
		owners, err := s.Store.Owners()
		if err != nil {
			return nil, err
		}
		for _, o := range owners {
			h := get(o.Name, o.UID)
			h.Sessions, h.Tasks, h.Events = o.Sessions, o.Tasks, o.Events
		}
	}
	if s.Creds != nil {
		for _, c := range s.Creds.Owners() {
			get(c.Name, c.UID).Credentials = c.Names
		}
	}
	out := make([]apiwire.Orphan, 0, len(by))
	for _, o := range by {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b apiwire.Orphan) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	return out, nil
}

// currentUID is the uid name has now, nil when no account has it.
func (s *Server) currentUID(ctx context.Context, name string) (*uint32, error) {
	u, err := s.accounts().LookupName(ctx, name)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, errUserDatabase(err)
	}
	return &u.UID, nil
}

// purgeOrphan deletes what name left under uid (?uid=N, -1 for data
// whose uid is not known), refusing while name is that account.
func (s *Server) purgeOrphan(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := account.ValidName(name); err != nil {
		writeError(w, rpc.InvalidParams("name", err.Error()))
		return
	}
	uid, err := strconv.ParseInt(r.URL.Query().Get("uid"), 10, 64)
	if err != nil || uid < store.NoUID || uid > int64(^uint32(0)) {
		writeError(w, rpc.InvalidParams("uid", "required: the uid the data was stored under (-1: not known)"))
		return
	}
	cur, err := s.currentUID(r.Context(), name)
	if err != nil {
		writeError(w, err)
		return
	}
	if cur != nil && int64(*cur) == uid {
		writeError(w, rpc.InvalidParams("uid", fmt.Sprintf("%q is uid %d now: its data is not an orphan", name, uid)))
		return
	}
	got, err := s.purge(name, uid)
	if err != nil {
		writeError(w, err)
		return
	}
	if got.Sessions+got.Tasks+len(got.Credentials) == 0 {
		writeError(w, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "nothing stored for %q uid %d", name, uid))
		return
	}
	got.CurrentUID = cur
	if s.Audit != nil {
		rec := audit.Record{Action: audit.AccountPurged, User: name, StoredUID: audit.StoredUID(uid), Count: got.Sessions,
			Reason: fmt.Sprintf("by %s: %d sessions, %d tasks, %d events, %d credentials", s.caller(r).user.Name, got.Sessions, got.Tasks, got.Events, len(got.Credentials))}
		if cur != nil {
			rec.UID = audit.UIDOf(*cur)
		}
		s.Audit.Log(rec)
	}
	writeJSON(w, http.StatusOK, got)
}

func (s *Server) purge(name string, uid int64) (apiwire.Orphan, error) {
	got := apiwire.Orphan{Name: name, UID: uid}
	if s.Store != nil {
		o, err := s.Store.Purge(name, uid)
		if err != nil {
			return got, err
		}
		got.Sessions, got.Tasks, got.Events = o.Sessions, o.Tasks, o.Events
	}
	if s.Creds != nil {
		names, err := s.Creds.Purge(credstore.Owner{Name: name, UID: uid})
		if err != nil {
			return got, err
		}
		got.Credentials = names
	}
	return got, nil
}
