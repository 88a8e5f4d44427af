package executor

import (
	"context"
	"fmt"

	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/identity"
)

// CheckEnvironment refuses to serve in environment name an account its
// definition does not list. polkit lets the daemon's account start
// agor-env-NAME@ANYONE and cannot read the definition; the executor can
// (/etc/agor is bound in read-only), so a compromised daemon account
// cannot put a person into an environment the operator did not open to
// her. A definition that cannot be read is a refusal too.
func CheckEnvironment(ctx context.Context, accounts *identity.Resolver, uid uint32, dir, name string) error {
	d, err := envdef.Load(dir, name)
	if err != nil {
		return fmt.Errorf("%w: environment %s: %v", ErrAccountRefused, name, err)
	}
	u, err := accounts.LookupUID(ctx, uid)
	if err != nil {
		return fmt.Errorf("%w: environment %s: %v", ErrAccountRefused, name, err)
	}
	ok, err := d.Permits(u.Name, func(groups ...string) (bool, error) { return accounts.InGroup(ctx, u, groups...) })
	if err != nil {
		return fmt.Errorf("%w: environment %s: %v", ErrAccountRefused, name, err)
	}
	if !ok {
		return fmt.Errorf("%w: %q is in neither the users nor the groups of environment %s", ErrAccountRefused, u.Name, name)
	}
	return nil
}
