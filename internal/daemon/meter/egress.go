package meter

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/netpolicy"
)

// egress refuses a request whose upstream the person's network rules
// would not let out of her executor. The gateway is a way out of it, so
// it goes by the same rules as the egress service: mode open reaches
// anything; none, nothing; proxy, what her allow and deny lists allow,
// every address a name resolves to included. The upstream itself is
// the operator's (gateway.upstreams), so loopback is refused only as
// the lists refuse it.
func (m *Meter) egress(ctx context.Context, g gateway.Grant) *gateway.Refusal {
	if m.Network == nil {
		return nil
	}
	set, err := m.Network(ctx, g.Person)
	if err != nil {
		m.log().Warn("gateway: network rules unreadable", "user", g.Person, "err", err)
		return &gateway.Refusal{Status: 403, Message: fmt.Sprintf("agor: the network rules for %s could not be read", g.Person)}
	}
	dst := destinationOf(g.Upstream)
	var rule string
	switch set.Mode {
	case config.NetworkOpen:
		return nil
	case config.NetworkNone:
		rule = "mode none"
	default:
		rule = m.decide(ctx, set.Policy(), dst)
	}
	if rule == "" {
		return nil
	}
	if m.Audit != nil {
		m.Audit.Aggregate(audit.Record{Action: audit.Egress, User: g.Person, Session: g.Session, Task: g.Task,
			Host: dst.Host, Port: int(dst.Port), Decision: "denied", Reason: "gateway: " + rule})
	}
	return &gateway.Refusal{Status: 403, Message: fmt.Sprintf(
		"agor: %s's network rules do not let her model requests reach %s (%s; network: in /etc/agor/config.yaml)",
		g.Person, net.JoinHostPort(dst.Host, strconv.Itoa(int(dst.Port))), rule)}
}

// decide is "" when pol lets every address of dst be reached, else the
// rule that refuses one of them.
func (m *Meter) decide(ctx context.Context, pol netpolicy.Policy, dst netpolicy.Destination) string {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(dst.Host); err == nil {
		addrs = []netip.Addr{a}
	} else if !pol.Resolvable(dst) {
		return "not listed"
	} else if addrs, err = netpolicy.Lookup(ctx, m.Resolve, dst.Host, 10*time.Second); err != nil {
		return err.Error()
	}
	for _, a := range addrs {
		if d := pol.Decide(dst, a); !d.Allowed {
			return d.Rule
		}
	}
	return ""
}

// destinationOf is the host and port u is reached at.
func destinationOf(u *url.URL) netpolicy.Destination {
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p, err := strconv.Atoi(u.Port()); err == nil && p > 0 && p < 65536 {
		port = p
	}
	return netpolicy.Destination{Host: u.Hostname(), Port: uint16(port)}
}
