package executor

import (
	"context"
	"errors"
	"os/user"
	"strconv"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/identity"
)

func TestCheckSelf(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	uid64, _ := strconv.ParseUint(me.Uid, 10, 32)
	uid := uint32(uid64)
	grp, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Skip(err)
	}
	nss := identity.New(identity.NSS{})
	broken := identity.New(identity.NSS{Getent: "/bin/false"})
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		accounts *identity.Resolver
		uid      uint32
		e        config.Execution
		ok       bool
	}{
		{"root", nss, 0, config.Execution{}, false},
		{"below min_uid", nss, 999, config.Execution{MinUID: 1000}, false},
		{"at min_uid, no lists", nss, 1000, config.Execution{MinUID: 1000}, true},
		{"nobody, above min_uid", nss, 65534, config.Execution{MinUID: 1000}, false},
		{"(uid_t)-1 in 16 bits", nss, 65535, config.Execution{MinUID: 1000}, false},
		{"a DynamicUser= account", nss, 61200, config.Execution{MinUID: 1000}, false},
		{"listed by name", nss, uid, config.Execution{AllowedUsers: []string{me.Username}}, uid != 0},
		{"listed by group", nss, uid, config.Execution{AllowedGroups: []string{grp.Name}}, uid != 0},
		{"not listed", nss, uid, config.Execution{AllowedUsers: []string{"someone-else"}, AllowedGroups: []string{"no-such-group-agor"}}, false},
		{"the shared account", nss, uid, config.Execution{AllowedUsers: []string{"someone-else"}, ExecutorUnixUser: me.Username}, uid != 0},
		{"lookup fails: refused", broken, uid, config.Execution{AllowedUsers: []string{me.Username}}, false},
	} {
		err := CheckSelf(ctx, tc.accounts, tc.uid, tc.e)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrAccountRefused)) {
			t.Errorf("%s: CheckSelf(uid %d) = %v, want ok=%v", tc.name, tc.uid, err, tc.ok)
		}
	}
}
