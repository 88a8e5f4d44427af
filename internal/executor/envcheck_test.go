package executor

import (
	"context"
	"errors"
	"os/user"
	"strconv"
	"testing"

	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/identity"
)

// TestCheckEnvironment: the executor serves in an environment only an
// account its definition lists, by name or group; a missing or unreadable
// definition is a refusal.
func TestCheckEnvironment(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	grp, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Skip(err)
	}
	uid64, _ := strconv.ParseUint(me.Uid, 10, 32)
	dir := t.TempDir()
	defs := map[string]envdef.Definition{
		"byname":  {Users: []string{me.Username}},
		"bygroup": {Groups: []string{grp.Name}},
		"others":  {Users: []string{"someone-else"}, Groups: []string{"no-such-group-agor"}},
		"nobody":  {},
	}
	for name, d := range defs {
		d.Name, d.Root, d.Agents = name, "/srv/"+name, envdef.AgentsHost
		if err := envdef.Save(dir, d); err != nil {
			t.Fatal(err)
		}
	}
	nss := identity.New(identity.NSS{})
	for name, ok := range map[string]bool{"byname": true, "bygroup": true, "others": false, "nobody": false, "missing": false, "../byname": false} {
		err := CheckEnvironment(context.Background(), nss, uint32(uid64), dir, name)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrAccountRefused)) {
			t.Errorf("%s: CheckEnvironment = %v, want ok=%v", name, err, ok)
		}
	}
}
