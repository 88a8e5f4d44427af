package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/identity"
)

// ErrAccountRefused: the executor's own account may not have an executor.
var ErrAccountRefused = errors.New("this account may not run an executor")

// CheckSelf applies the daemon's execution policy (min_uid, no special
// uid such as nobody's, allowed_users, allowed_groups, from the
// root-owned configuration) to the account this executor runs as. The daemon checks the same before it starts a unit;
// checking again here holds the rule even against a compromised daemon
// account, which polkit lets start agor-executor@ANYONE.
func CheckSelf(ctx context.Context, accounts *identity.Resolver, uid uint32, e config.Execution) error {
	if uid == 0 {
		return fmt.Errorf("%w: uid 0 is root", ErrAccountRefused)
	}
	if int64(uid) < int64(e.MinUID) {
		return fmt.Errorf("%w: uid %d is below min_uid %d (a system account)", ErrAccountRefused, uid, e.MinUID)
	}
	// By uid: the daemon also refuses special names, but a lookup here
	// would cost every start when no lists are set.
	if err := account.Special("", uid); err != nil {
		return fmt.Errorf("%w: %v", ErrAccountRefused, err)
	}
	if len(e.AllowedUsers) == 0 && len(e.AllowedGroups) == 0 {
		return nil
	}
	u, err := accounts.LookupUID(ctx, uid)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAccountRefused, err)
	}
	if slices.Contains(e.AllowedUsers, u.Name) || (!e.RunAsUnixUser && u.Name == e.ExecutorUnixUser) {
		return nil
	}
	in, err := accounts.InGroup(ctx, u, e.AllowedGroups...)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAccountRefused, err)
	}
	if !in {
		return fmt.Errorf("%w: %q is in neither allowed_users nor allowed_groups", ErrAccountRefused, u.Name)
	}
	return nil
}
