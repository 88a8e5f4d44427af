// Package executorunit brings per-user executors up and down on this
// host: through systemd's D-Bus API in production (backend "systemd"), or
// by starting them itself exactly as systemd would (backend "direct"),
// after checking the person against the execution policy. Both sides use
// it: the daemon, and agorctl's --no-daemon and executors ensure, which do
// in-process what the daemon does. The daemon's Slurm backend
// (internal/daemon/lifecycle) implements the same Backend.
package executorunit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/identity"
)

// Backend starts and stops executors. Ensure returns once the executor's
// socket accepts connections (the executor itself may start on connect).
type Backend interface {
	Ensure(ctx context.Context, user string) (Executor, error)
	Stop(ctx context.Context, user string) error
	List(ctx context.Context) ([]Status, error)
	// Usage reports what each of users' executors uses now; a user with
	// no executor is left out.
	Usage(ctx context.Context, users []string) (map[string]Usage, error)
	// Watch reports executor state changes to fn until ctx ends.
	Watch(ctx context.Context, fn func(UnitChange)) error
	// Alive reports whether the executor that answered ping with pid is
	// still there: a process on this host, or a job that has not ended.
	Alive(user string, pid int) bool
}

// processAlive is Alive for executors on this host.
func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// Alive: the executor's process exists here.
func (s *Systemd) Alive(_ string, pid int) bool { return processAlive(pid) }

// Alive: the executor's process exists here.
func (d *Direct) Alive(_ string, pid int) bool { return processAlive(pid) }

// Executor is where a user's executor listens, or, for one that dials
// back (the slurm backend), how to wait for its connection.
type Executor struct {
	User   string
	UID    int
	Socket string
	// Dial, when set, is the way to the executor instead of Socket.
	Dial func(ctx context.Context) (net.Conn, error)
}

// Status is one live executor as the backend sees it.
type Status struct {
	User    string
	Socket  string // socket unit or listener state, e.g. "active"
	Service string // service state: "active", "inactive", "failed", ...
	// The slurm backend's: the executor's job, its node and Slurm state.
	JobID, Node, JobState string
}

// Usage is what one executor and all it started use, as the backend can
// tell: nil is unknown (Unavailable says why).
type Usage struct {
	MemoryBytes  *uint64 // memory charged now
	CPUNSec      *uint64 // CPU time used since the unit started
	Tasks        *uint64 // tasks (threads) now
	IOReadBytes  *uint64
	IOWriteBytes *uint64
	Source       string   // where the numbers come from: "systemd" or "proc"
	Unavailable  []string // "field: why" for each nil field
}

// Errors of Ensure that callers map to "executor unavailable" with a reason.
var (
	ErrInvalidUser   = errors.New("invalid user name")
	ErrNoSuchUser    = errors.New("no such user")
	ErrLookupFailed  = errors.New("user database unavailable")
	ErrNotAllowed    = errors.New("user not allowed to run an executor")
	ErrNotAuthorized = errors.New("not authorized to manage executor units (polkit)")
	ErrUnitFailed    = errors.New("executor unit failed")
)

// Policy says who may have an executor and where it listens.
type Policy struct {
	MinUID         int
	AllowedUsers   []string // with AllowedGroups empty too: anyone >= MinUID
	AllowedGroups  []string
	SocketTemplate string // "/run/agor/executors/{user}.sock"; {user} is the escaped name
	// EnvironmentsDir holds the environments' definitions ("":
	// envdef.DefaultDir).
	EnvironmentsDir string
	Accounts        *identity.Resolver // nil: identity.Default()
}

// Resolver is where the policy looks accounts up: Accounts, else the
// system's (identity.Default).
func (p Policy) Resolver() *identity.Resolver {
	if p.Accounts != nil {
		return p.Accounts
	}
	return identity.Default()
}

// Check validates a user for an executor: a name systemd accepts, an
// account the system knows (directory accounts included), never root nor
// a system account below MinUID nor a special one (nobody; account.Special), and allowed by the user and group lists.
// A user database that does not answer is a refusal.
func (p Policy) Check(ctx context.Context, name string) (Executor, error) {
	if err := account.ValidName(name); err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrInvalidUser, err)
	}
	u, err := p.Resolver().LookupName(ctx, name)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return Executor{}, fmt.Errorf("%w: %q", ErrNoSuchUser, name)
	case err != nil:
		return Executor{}, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	case u.UID == 0:
		return Executor{}, fmt.Errorf("%w: %q is root", ErrNotAllowed, name)
	case int64(u.UID) < int64(p.MinUID):
		return Executor{}, fmt.Errorf("%w: %q has uid %d, below the minimum %d", ErrNotAllowed, name, u.UID, p.MinUID)
	}
	if err := account.Special(u.Name, u.UID); err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrNotAllowed, err)
	}
	listed, err := p.listed(ctx, u)
	if err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	if !listed {
		return Executor{}, fmt.Errorf("%w: %q is in neither allowed_users nor allowed_groups", ErrNotAllowed, name)
	}
	sock, err := p.SocketPath(name)
	if err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrInvalidUser, err)
	}
	return Executor{User: name, UID: int(u.UID), Socket: sock}, nil
}

func (p Policy) listed(ctx context.Context, u identity.User) (bool, error) {
	if len(p.AllowedUsers) == 0 && len(p.AllowedGroups) == 0 {
		return true, nil
	}
	if slices.Contains(p.AllowedUsers, u.Name) {
		return true, nil
	}
	return p.Resolver().InGroup(ctx, u, p.AllowedGroups...)
}

// SocketPath is where name's executor listens: the template with the
// name escaped as systemd escapes a unit instance (%i).
func (p Policy) SocketPath(name string) (string, error) {
	return account.SocketPath(p.SocketTemplate, name)
}
