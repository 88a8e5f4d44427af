package identity

import (
	"context"
	"slices"
)

// Table is a user database held in memory: for tests, and anywhere the
// accounts are known in advance. A name in Errors answers with that error
// (ErrUnavailable, say) instead of a record.
type Table struct {
	Users   []User
	Groups  []Group
	Members map[string][]string // group name → user names (supplementary)
	Errors  map[string]error
}

var _ Source = Table{}

// Name says which database this is.
func (Table) Name() string { return "table" }

// UserByName finds name.
func (t Table) UserByName(_ context.Context, name string) (User, error) {
	if err := t.Errors[name]; err != nil {
		return User{}, err
	}
	for _, u := range t.Users {
		if u.Name == name {
			return u, nil
		}
	}
	return User{}, ErrNotFound
}

// UserByUID finds uid.
func (t Table) UserByUID(_ context.Context, uid uint32) (User, error) {
	for _, u := range t.Users {
		if u.UID == uid {
			return u, nil
		}
	}
	return User{}, ErrNotFound
}

// GroupByName finds name.
func (t Table) GroupByName(_ context.Context, name string) (Group, error) {
	for _, g := range t.Groups {
		if g.Name == name {
			return g, nil
		}
	}
	return Group{}, ErrNotFound
}

// GroupByGID finds gid.
func (t Table) GroupByGID(_ context.Context, gid uint32) (Group, error) {
	for _, g := range t.Groups {
		if g.GID == gid {
			return g, nil
		}
	}
	return Group{}, ErrNotFound
}

// GroupIDs lists u's primary group and the groups whose Members name u.
func (t Table) GroupIDs(_ context.Context, u User) ([]uint32, error) {
	ids := []uint32{u.GID}
	for _, g := range t.Groups {
		if slices.Contains(t.Members[g.Name], u.Name) {
			ids = append(ids, g.GID)
		}
	}
	return ids, nil
}

// Users is a Table of the named accounts, each with its uid and a primary
// group of the same number.
func Users(uids map[string]uint32) Table {
	var t Table
	for name, uid := range uids {
		t.Users = append(t.Users, User{Name: name, UID: uid, GID: uid})
	}
	return t
}
