package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

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

// checkAccount refuses to serve when the configuration does not allow
// this account an executor: the reason goes to the journal, and
// connections already waiting are closed at once rather than left to
// time out.
func checkAccount(ctx context.Context, o *Options, log *slog.Logger) (config.Config, int, bool) {
	c, err := config.Load(o.Config)
	if err != nil {
		log.Error("cannot read the execution policy; refusing to serve", "err", err)
		return c, ExitUsage, false
	}
	err = CheckSelf(ctx, identity.Default(), uint32(os.Getuid()), c.Execution)
	if err == nil && o.Environment != "" {
		err = CheckEnvironment(ctx, identity.Default(), uint32(os.Getuid()), o.EnvironmentsDir, o.Environment)
	}
	if err == nil {
		return c, 0, true
	}
	log.Error("refusing to serve: "+err.Error(), "config", o.Config)
	if o.Dial == "" {
		if ln, lerr := listenerFor(o); lerr == nil {
			refuseWaiting(ln.(*net.UnixListener))
		}
	}
	return c, ExitRefused, false
}

// refuseWaiting closes the connections queued on ln, until none arrives
// for a moment; the listening socket itself stays systemd's.
func refuseWaiting(ln *net.UnixListener) {
	for {
		_ = ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
