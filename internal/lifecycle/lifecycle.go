// Package lifecycle brings per-user executors up and down: through
// systemd's D-Bus API in production (backend "systemd"), or by starting
// them itself exactly as systemd would (backend "direct").
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/account"
)

// Backend starts and stops executors. Ensure returns once the executor's
// socket accepts connections (the executor itself may start on connect).
type Backend interface {
	Ensure(ctx context.Context, user string) (Executor, error)
	Stop(ctx context.Context, user string) error
	List(ctx context.Context) ([]Status, error)
	// Watch reports executor state changes to fn until ctx ends.
	Watch(ctx context.Context, fn func(Event)) error
}

// Executor is where a user's executor listens.
type Executor struct {
	User   string
	UID    int
	Socket string
}

// Status is one live executor as the backend sees it.
type Status struct {
	User    string
	Socket  string // socket unit or listener state, e.g. "active"
	Service string // service state: "active", "inactive", "failed", ...
}

// Errors of Ensure that callers map to "executor unavailable" with a reason.
var (
	ErrInvalidUser   = errors.New("invalid user name")
	ErrNoSuchUser    = errors.New("no such user")
	ErrNotAllowed    = errors.New("user not allowed to run an executor")
	ErrNotAuthorized = errors.New("not authorized to manage executor units (polkit)")
	ErrUnitFailed    = errors.New("executor unit failed")
)

// Policy says who may have an executor and where it listens.
type Policy struct {
	MinUID         int
	AllowedUsers   []string // with AllowedGroups empty too: anyone >= MinUID
	AllowedGroups  []string
	SocketTemplate string // "/run/agor/executors/{user}.sock"
}

// Check validates a user for an executor: a plain name, an existing
// account, never root nor a system account below MinUID, and allowed by
// the user and group lists.
func (p Policy) Check(name string) (Executor, error) {
	if err := account.ValidName(name); err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrInvalidUser, err)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Executor{}, fmt.Errorf("%w: %q", ErrNoSuchUser, name)
	}
	uid, _ := strconv.Atoi(u.Uid)
	switch {
	case uid == 0:
		return Executor{}, fmt.Errorf("%w: %q is root", ErrNotAllowed, name)
	case uid < p.MinUID:
		return Executor{}, fmt.Errorf("%w: %q has uid %d, below the minimum %d", ErrNotAllowed, name, uid, p.MinUID)
	case !p.listed(u):
		return Executor{}, fmt.Errorf("%w: %q is in neither allowed_users nor allowed_groups", ErrNotAllowed, name)
	}
	return Executor{User: name, UID: uid, Socket: p.SocketPath(name)}, nil
}

func (p Policy) listed(u *user.User) bool {
	if len(p.AllowedUsers) == 0 && len(p.AllowedGroups) == 0 {
		return true
	}
	if slices.Contains(p.AllowedUsers, u.Username) {
		return true
	}
	gids, _ := u.GroupIds()
	for _, g := range p.AllowedGroups {
		if grp, err := user.LookupGroup(g); err == nil && slices.Contains(gids, grp.Gid) {
			return true
		}
	}
	return false
}

// SocketPath is where name's executor listens.
func (p Policy) SocketPath(name string) string {
	return strings.Replace(p.SocketTemplate, "{user}", name, 1)
}
