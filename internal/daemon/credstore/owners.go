package credstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/agor-sh/agor/internal/identity"
)

// Accounts names the account a user name has now.
type Accounts = identity.Names

// Adoption is what Adopt did, by user name.
type Adoption = identity.Adoption

// Adopt moves the previous version's keys ("USER/NAME", no uid) to the
// account their name has now (identity.Adopt): resealed in the account's
// slot, or under NoUID for a name no account has. Keys of a name the user
// database cannot answer for are left as they are, unusable, until a
// later call.
func (s *Store) Adopt(ctx context.Context, accounts Accounts) (Adoption, error) {
	byName := s.legacy()
	names := slices.Sorted(maps.Keys(byName))
	return identity.Adopt(ctx, accounts, names, func(user string, uid int64) error {
		return s.move(user, Owner{Name: user, UID: uid}, byName[user])
	})
}

// legacy lists the previous version's keys, by user name.
func (s *Store) legacy() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for sl := range s.items {
		if o, name, legacy, ok := parseSlot(sl); ok && legacy {
			out[o.Name] = append(out[o.Name], name)
		}
	}
	return out
}

// move reseals user's legacy keys names in o's slots and saves. A key
// that does not decrypt (or is gone meanwhile) is left where it is: it
// was unusable before, and stays listed for an admin to purge.
func (s *Store) move(user string, o Owner, names []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	touched := []string{}
	for _, name := range names {
		touched = append(touched, legacySlot(user, name), slot(o, name))
		old := legacySlot(user, name)
		enc, ok := s.items[old]
		if !ok {
			continue
		}
		v, err := s.unseal(old, enc)
		if err != nil {
			continue
		}
		if _, taken := s.items[slot(o, name)]; !taken { // one set since the upgrade wins
			if err := s.sealLocked(slot(o, name), v); err != nil {
				return err
			}
		}
		delete(s.items, old)
	}
	return s.saveLocked(touched...)
}

// Held is one account's keys: their names.
type Held struct {
	Owner
	Names []string
}

// Owners lists the accounts that hold keys (daemon-wide keys are
// nobody's), by name then uid; keys not yet adopted are under NoUID.
func (s *Store) Owners() []Held {
	s.mu.Lock()
	by := map[Owner][]string{}
	for sl := range s.items {
		if o, name, _, ok := parseSlot(sl); ok && o.Name != "" {
			by[o] = append(by[o], name)
		}
	}
	s.mu.Unlock()
	out := make([]Held, 0, len(by))
	for o, names := range by {
		slices.Sort(names)
		out = append(out, Held{Owner: o, Names: names})
	}
	slices.SortFunc(out, func(a, b Held) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.UID - b.UID)
	})
	return out
}

// Purge deletes every key of o (NoUID: also those not yet adopted) and
// returns their names.
func (s *Store) Purge(o Owner) ([]string, error) {
	if o.Name == "" {
		return nil, errors.New("credstore: purge needs an account, not the daemon-wide keys")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone, slots []string
	for sl := range s.items {
		if so, name, _, ok := parseSlot(sl); ok && so == o {
			delete(s.items, sl)
			gone, slots = append(gone, name), append(slots, sl)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	slices.Sort(gone)
	return gone, s.saveLocked(slots...)
}

// Names lists the names of o's own keys (a quota counts them).
func (s *Store) Names(o Owner) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for sl := range s.items {
		if so, name, _, ok := parseSlot(sl); ok && so == o {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
