// Package identity answers "who is this uid or name, and which groups is
// it in" the way the system does, so directory accounts (LDAP, FreeIPA, AD
// through SSSD or nslcd) are seen as well as /etc/passwd ones: through
// systemd's user database over varlink where systemd-userdbd runs, and
// through NSS (getent) otherwise. A lookup that fails or times out is an
// error, never an empty name: callers refuse.
//
// getent rather than a cgo build: the binaries stay static (one .deb and
// .rpm for every distribution, no glibc version to match), and getent
// runs whatever NSS modules the host configured, in a process of its own,
// so a hanging directory cannot wedge ours past the lookup's timeout.
package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// User is an account as the user database has it.
type User struct {
	Name  string
	UID   uint32
	GID   uint32 // primary group
	Home  string
	Shell string
}

// Group is a group as the user database has it.
type Group struct {
	Name string
	GID  uint32
}

var (
	// ErrNotFound: the database answered, and has no such account.
	ErrNotFound = errors.New("no such account")
	// ErrUnavailable: the database did not answer (failed, timed out).
	ErrUnavailable = errors.New("user database unavailable")
)

// Source is one user database.
type Source interface {
	UserByName(ctx context.Context, name string) (User, error)
	UserByUID(ctx context.Context, uid uint32) (User, error)
	GroupByName(ctx context.Context, name string) (Group, error)
	GroupByGID(ctx context.Context, gid uint32) (Group, error)
	// GroupIDs lists the gids u is in: primary and supplementary.
	GroupIDs(ctx context.Context, u User) ([]uint32, error)
	// Name says which database this is ("userdb" or "nss").
	Name() string
}

// Timeout bounds one lookup.
const Timeout = 5 * time.Second

// Cache lifetimes: an answer is reused this long. Errors are not kept.
const (
	PositiveTTL = 10 * time.Second
	NegativeTTL = 2 * time.Second
)

// Resolver looks accounts up in a Source and keeps answers briefly.
type Resolver struct {
	src Source
	now func() time.Time

	mu    sync.Mutex
	cache map[string]entry
}

type entry struct {
	val any // User, Group, []uint32
	err error
	exp time.Time
}

// New returns a Resolver over src.
func New(src Source) *Resolver {
	return &Resolver{src: src, now: time.Now, cache: map[string]entry{}}
}

var (
	defaultOnce sync.Once
	defaultRes  *Resolver
)

// Default is the process's Resolver over the system's database (Detect).
func Default() *Resolver {
	defaultOnce.Do(func() { defaultRes = New(Detect()) })
	return defaultRes
}

// Source says which database answers.
func (r *Resolver) Source() string { return r.src.Name() }

// LookupName finds an account by name.
func (r *Resolver) LookupName(ctx context.Context, name string) (User, error) {
	v, err := r.cached(ctx, "n:"+name, func(ctx context.Context) (any, error) { return r.src.UserByName(ctx, name) })
	u, _ := v.(User)
	if err != nil {
		return User{}, wrap(err, "user "+strconv.Quote(name))
	}
	return u, nil
}

// LookupUID finds an account by uid.
func (r *Resolver) LookupUID(ctx context.Context, uid uint32) (User, error) {
	v, err := r.cached(ctx, "u:"+strconv.FormatUint(uint64(uid), 10), func(ctx context.Context) (any, error) { return r.src.UserByUID(ctx, uid) })
	u, _ := v.(User)
	if err != nil {
		return User{}, wrap(err, "uid "+strconv.FormatUint(uint64(uid), 10))
	}
	return u, nil
}

// LookupGroup finds a group by name.
func (r *Resolver) LookupGroup(ctx context.Context, name string) (Group, error) {
	v, err := r.cached(ctx, "g:"+name, func(ctx context.Context) (any, error) { return r.src.GroupByName(ctx, name) })
	g, _ := v.(Group)
	if err != nil {
		return Group{}, wrap(err, "group "+strconv.Quote(name))
	}
	return g, nil
}

// LookupGID finds a group by gid.
func (r *Resolver) LookupGID(ctx context.Context, gid uint32) (Group, error) {
	key := strconv.FormatUint(uint64(gid), 10)
	v, err := r.cached(ctx, "i:"+key, func(ctx context.Context) (any, error) { return r.src.GroupByGID(ctx, gid) })
	g, _ := v.(Group)
	if err != nil {
		return Group{}, wrap(err, "gid "+key)
	}
	return g, nil
}

// GroupIDs lists the gids u is in.
func (r *Resolver) GroupIDs(ctx context.Context, u User) ([]uint32, error) {
	v, err := r.cached(ctx, "m:"+u.Name, func(ctx context.Context) (any, error) { return r.src.GroupIDs(ctx, u) })
	ids, _ := v.([]uint32)
	return ids, wrap(err, "groups of "+strconv.Quote(u.Name))
}

// InGroup reports whether u is in any of groups (by name). A group that
// does not exist holds nobody; a database that does not answer is an error.
func (r *Resolver) InGroup(ctx context.Context, u User, groups ...string) (bool, error) {
	if len(groups) == 0 {
		return false, nil
	}
	ids, err := r.GroupIDs(ctx, u)
	if err != nil {
		return false, err
	}
	for _, name := range groups {
		g, err := r.LookupGroup(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if g.GID == u.GID || slices.Contains(ids, g.GID) {
			return true, nil
		}
	}
	return false, nil
}

func (r *Resolver) cached(ctx context.Context, key string, f func(context.Context) (any, error)) (any, error) {
	r.mu.Lock()
	e, ok := r.cache[key]
	r.mu.Unlock()
	if ok && r.now().Before(e.exp) {
		return e.val, e.err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	v, err := f(ctx)
	switch {
	case err == nil:
		r.keep(key, entry{val: v, exp: r.now().Add(PositiveTTL)})
	case errors.Is(err, ErrNotFound):
		r.keep(key, entry{err: err, exp: r.now().Add(NegativeTTL)})
	case !errors.Is(err, ErrUnavailable):
		err = fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return v, err
}

// maxCache bounds the cache; past it, it starts over.
const maxCache = 4096

func (r *Resolver) keep(key string, e entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCache {
		clear(r.cache)
	}
	r.cache[key] = e
}

func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
