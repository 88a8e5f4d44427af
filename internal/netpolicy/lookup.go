package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Resolver looks a name up; nil in Lookup means the system's resolver.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Lookup resolves host with resolve within timeout, as the daemon does
// for a destination its lists name: unmapped addresses, and an error
// (naming host) when there are none.
func Lookup(ctx context.Context, resolve Resolver, host string, timeout time.Duration) ([]netip.Addr, error) {
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := resolve(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, nil
}
