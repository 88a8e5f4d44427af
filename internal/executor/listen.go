package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
)

// Activated returns the socket systemd passed under FileDescriptorName=
// name. It clears LISTEN_* from the environment, so no child inherits them.
func Activated(name string) (*net.UnixListener, error) {
	byName, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("activated sockets: %w", err)
	}
	if len(byName) == 0 {
		return nil, errors.New("no socket: systemd passed none (LISTEN_FDS unset or for another process) and --listen was not given")
	}
	lns := byName[name]
	if len(lns) != 1 {
		return nil, fmt.Errorf("activated socket %q not found (have %s): set FileDescriptorName=%s in the .socket unit or --socket-name", name, names(byName), name)
	}
	ul, ok := lns[0].(*net.UnixListener)
	if !ok {
		return nil, fmt.Errorf("activated socket %q is %s, want a Unix stream socket", name, lns[0].Addr().Network())
	}
	return ul, nil
}

func names(m map[string][]net.Listener) string {
	var out []string
	for n := range m {
		out = append(out, strconv.Quote(n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// PolicyFor serves root and the daemon's account (who: a user name or a
// numeric uid), and nobody else: not the daemon's group, whose members
// would otherwise drive every user's executor.
func PolicyFor(ctx context.Context, who string) (peer.Policy, error) {
	pol := peer.Policy{AllowRoot: true}
	if n, err := strconv.ParseUint(who, 10, 32); err == nil {
		pol.UID = uint32(n)
		return pol, nil
	}
	u, err := identity.Default().LookupName(ctx, who)
	if err != nil {
		return pol, fmt.Errorf("daemon user: %w (set --daemon-user to the daemon's account)", err)
	}
	pol.UID = u.UID
	return pol, nil
}

// CurrentUser names the account this process runs as (its uid when the
// user database does not answer).
func CurrentUser() string {
	if u, err := identity.Default().LookupUID(context.Background(), uint32(os.Getuid())); err == nil {
		return u.Name
	}
	return strconv.Itoa(os.Getuid())
}
