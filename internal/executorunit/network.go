package executorunit

import (
	"context"
	"errors"
	"fmt"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/envdef"
)

// ErrNetworkUnenforced: a person's network mode needs their executor in a
// network namespace of its own, and it would not be: refused rather than
// served with the host's network.
var ErrNetworkUnenforced = errors.New("network mode not enforced")

// NetworkFunc names a person's effective network set now.
type NetworkFunc func(ctx context.Context, user string) (config.NetworkSet, error)

// NetworkFor is user's effective set in n: the default, their groups'
// overrides, their own.
func NetworkFor(ctx context.Context, n config.Network, p Policy, user string) (config.NetworkSet, error) {
	if n.Uniform() {
		return n.Default, nil
	}
	u, err := p.Resolver().LookupName(ctx, user)
	if err != nil {
		return config.NetworkSet{}, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	set, err := n.For(user, func(g string) (bool, error) { return p.Resolver().InGroup(ctx, u, g) })
	if err != nil {
		return config.NetworkSet{}, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	return set, nil
}

// PrivateNetwork reports the PrivateNetwork= setting of user's executor
// service as systemd has it loaded: what its next start gets.
func (s *Systemd) PrivateNetwork(ctx context.Context, user string) (bool, error) {
	conn, err := s.bus(ctx)
	if err != nil {
		return false, err
	}
	unit := unitName(user, "service")
	p, err := conn.GetServicePropertyContext(ctx, unit, "PrivateNetwork")
	if err != nil {
		return false, s.dbusErr("read PrivateNetwork of "+unit, err)
	}
	v, ok := p.Value.Value().(bool)
	if !ok {
		return false, fmt.Errorf("read PrivateNetwork of %s: not a boolean: %v", unit, p.Value)
	}
	return v, nil
}

// checkNetwork fails closed: a person under proxy or none is served only
// by a unit with PrivateNetwork=yes.
func (s *Systemd) checkNetwork(ctx context.Context, user string) error {
	if s.Network == nil {
		return nil
	}
	account, _ := envdef.SplitKey(user) // her mode, wherever her executor runs
	set, err := s.Network(ctx, account)
	if err != nil || !set.Private() {
		return err
	}
	private, err := s.PrivateNetwork(ctx, user)
	if err != nil {
		return fmt.Errorf("%w: %s is under network mode %s: %v", ErrNetworkUnenforced, user, set.Mode, err)
	}
	if !private {
		return fmt.Errorf("%w: %s is under network mode %s, but %s does not have PrivateNetwork=yes: run `agorctl network apply` as root (it writes the unit's drop-in and restarts the executor)",
			ErrNetworkUnenforced, user, set.Mode, unitName(user, "service"))
	}
	return nil
}

// RefuseUnconfined is the direct and slurm backends' answer for people
// under proxy or none: those backends cannot give an executor a network
// namespace, so such a person is not served.
func RefuseUnconfined(ctx context.Context, network NetworkFunc, backend, user string) error {
	if network == nil {
		return nil
	}
	set, err := network(ctx, user)
	if err != nil || !set.Private() {
		return err
	}
	return fmt.Errorf("%w: %s is under network mode %s, which the %s backend cannot enforce (only systemd's PrivateNetwork= does): set their mode to open, or use execution.backend systemd",
		ErrNetworkUnenforced, user, set.Mode, backend)
}
