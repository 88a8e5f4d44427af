package config

import (
	"fmt"
	"path/filepath"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/netpolicy"
)

// Network modes: open leaves an executor on the host's network; proxy
// puts it in a network namespace of its own (PrivateNetwork=yes) whose
// only way out is the daemon's egress service, which applies the allow
// and deny lists; none gives it no way out at all.
const (
	NetworkOpen  = "open"
	NetworkProxy = "proxy"
	NetworkNone  = "none"
)

// Network is each person's network egress: a default, then each group
// override the person is in (file order), then their own. A later mode
// replaces an earlier one; allow and deny entries add up.
type Network struct {
	Default NetworkSet            `yaml:"default"`
	Groups  []GroupNetwork        `yaml:"groups"`
	Users   map[string]NetworkSet `yaml:"users"`
	// SocketPath is the egress service's Unix socket (agor-daemon.socket
	// makes it; the daemon listens there itself when not activated).
	SocketPath string `yaml:"socket_path"`
	// ProxyPort is the loopback port each confined executor serves its
	// HTTP proxy on, inside its own network namespace.
	ProxyPort int `yaml:"proxy_port"`
	// MaxConnectionsPerUser bounds one person's connections through the
	// egress service at once.
	MaxConnectionsPerUser int   `yaml:"max_connections_per_user"`
	ConnectTimeoutMS      int64 `yaml:"connect_timeout_ms"` // resolving and connecting out
}

// NetworkSet is one level of the section.
type NetworkSet struct {
	Mode  string   `yaml:"mode"`  // open, proxy or none; "" leaves the level below's
	Allow []string `yaml:"allow"` // see netpolicy.Rule
	Deny  []string `yaml:"deny"`
}

// GroupNetwork is an override for the members of Group.
type GroupNetwork struct {
	Group      string `yaml:"group"`
	NetworkSet `yaml:",inline"`
}

// DefaultNetwork leaves everyone's network open, as before the section
// existed.
func DefaultNetwork() Network {
	return Network{Default: NetworkSet{Mode: NetworkOpen}, SocketPath: "/run/agor/egress.sock",
		ProxyPort: 3128, MaxConnectionsPerUser: 64, ConnectTimeoutMS: 10_000}
}

// Over is s laid over base.
func (s NetworkSet) Over(base NetworkSet) NetworkSet {
	if s.Mode != "" {
		base.Mode = s.Mode
	}
	base.Allow = append(append([]string(nil), base.Allow...), s.Allow...)
	base.Deny = append(append([]string(nil), base.Deny...), s.Deny...)
	return base
}

// For is user's effective set, as Limits.For.
func (n Network) For(user string, inGroup func(group string) (bool, error)) (NetworkSet, error) {
	eff := n.Default
	for _, g := range n.Groups {
		in, err := inGroup(g.Group)
		if err != nil {
			return NetworkSet{}, fmt.Errorf("network for %s: group %s: %w", user, g.Group, err)
		}
		if in {
			eff = g.NetworkSet.Over(eff)
		}
	}
	if u, ok := n.Users[user]; ok {
		eff = u.Over(eff)
	}
	return eff, nil
}

// Private reports whether the mode needs the executor in a network
// namespace of its own.
func (s NetworkSet) Private() bool { return s.Mode == NetworkProxy || s.Mode == NetworkNone }

// Policy is the set's lists as the egress service applies them (the
// configuration was validated, so they parse).
func (s NetworkSet) Policy() netpolicy.Policy {
	p, err := netpolicy.Parse(s.Allow, s.Deny)
	if err != nil {
		return netpolicy.Policy{Deny: []netpolicy.Rule{{Text: "* (bad list: " + err.Error() + ")", Name: "*"}}}
	}
	return p
}

// Uniform reports whether everyone gets the default (no group or user
// overrides): then a person's mode needs no user database.
func (n Network) Uniform() bool { return len(n.Groups) == 0 && len(n.Users) == 0 }

func (n Network) validate() error {
	if err := n.Default.validate("network.default", true); err != nil {
		return err
	}
	for i, g := range n.Groups {
		key := fmt.Sprintf("network.groups[%d]", i)
		if err := account.ValidName(g.Group); err != nil {
			return fmt.Errorf("%s.group: %v", key, err)
		}
		if err := g.validate(key, false); err != nil {
			return err
		}
	}
	for name, s := range n.Users {
		if err := account.ValidName(name); err != nil {
			return fmt.Errorf("network.users: %v", err)
		}
		if err := s.validate("network.users."+name, false); err != nil {
			return err
		}
	}
	switch {
	case !filepath.IsAbs(n.SocketPath):
		return fmt.Errorf("network.socket_path: %q is not an absolute path", n.SocketPath)
	case n.ProxyPort < 1 || n.ProxyPort > 65535:
		return fmt.Errorf("network.proxy_port: %d is not a port from 1 to 65535", n.ProxyPort)
	case n.MaxConnectionsPerUser <= 0:
		return fmt.Errorf("network.max_connections_per_user: must be positive")
	case n.ConnectTimeoutMS <= 0:
		return fmt.Errorf("network.connect_timeout_ms: must be positive")
	}
	return nil
}

func (s NetworkSet) validate(key string, needMode bool) error {
	switch s.Mode {
	case NetworkOpen, NetworkProxy, NetworkNone:
	case "":
		if needMode {
			return fmt.Errorf("%s.mode: missing: open, proxy or none", key)
		}
	default:
		return fmt.Errorf("%s.mode: %q is not open, proxy or none", key, s.Mode)
	}
	for i, e := range s.Allow {
		if _, err := netpolicy.ParseRule(e); err != nil {
			return fmt.Errorf("%s.allow[%d]: %v", key, i, err)
		}
	}
	for i, e := range s.Deny {
		if _, err := netpolicy.ParseRule(e); err != nil {
			return fmt.Errorf("%s.deny[%d]: %v", key, i, err)
		}
	}
	return nil
}
