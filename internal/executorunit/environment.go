package executorunit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/envdef"
)

// Refusals of an executor in an environment.
var (
	ErrNoSuchEnvironment      = errors.New("no such environment")
	ErrEnvironmentNotAllowed  = errors.New("not allowed in the environment")
	ErrEnvironmentUnsupported = errors.New("environments need the systemd backend")
)

// CheckEnvironment says whether user may use env: its definition (in
// EnvironmentsDir) lists her, by name or group. The daemon asks before it
// stores anything for her there; her executor in env asks again itself.
func (p Policy) CheckEnvironment(ctx context.Context, user, env string) (envdef.Definition, error) {
	d, err := envdef.Load(p.environmentsDir(), env)
	if err != nil {
		return d, fmt.Errorf("%w: %v", ErrNoSuchEnvironment, err)
	}
	u, err := p.Resolver().LookupName(ctx, user)
	if err != nil {
		return d, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	ok, err := d.Permits(u.Name, func(groups ...string) (bool, error) { return p.Resolver().InGroup(ctx, u, groups...) })
	if err != nil {
		return d, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	if !ok {
		return d, fmt.Errorf("%w: %s may not use environment %s (not in its users or groups)", ErrEnvironmentNotAllowed, user, env)
	}
	return d, nil
}

func (p Policy) environmentsDir() string {
	if p.EnvironmentsDir != "" {
		return p.EnvironmentsDir
	}
	return envdef.DefaultDir
}

// CheckKey is Check for an executor key: the account's policy, then,
// in an environment, the environment's; the socket is the environment's
// (the template's directory/ENV/NAME.sock, as agorctl renders it).
func (p Policy) CheckKey(ctx context.Context, key string) (Executor, error) {
	user, env := envdef.SplitKey(key)
	ex, err := p.Check(ctx, user)
	if err != nil || env == "" {
		return ex, err
	}
	if _, err := p.CheckEnvironment(ctx, user, env); err != nil {
		return Executor{}, err
	}
	dir, base := filepath.Split(p.SocketTemplate)
	ex.Socket, err = account.SocketPath(filepath.Join(dir, env, base), user)
	if err != nil {
		return Executor{}, fmt.Errorf("%w: %v", ErrInvalidUser, err)
	}
	return ex, nil
}

// HostOnly refuses an environment's key in a backend that cannot run
// one (direct, slurm): they have no RootDirectory=.
func HostOnly(key, backend string) error {
	if _, env := envdef.SplitKey(key); env != "" {
		return fmt.Errorf("%w: the %s backend cannot run environment %s", ErrEnvironmentUnsupported, backend, env)
	}
	return nil
}
