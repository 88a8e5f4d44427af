package config

import (
	"net/netip"

	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/netpolicy"

	"github.com/google/go-cmp/cmp"
)

const networkYAML = `
network:
  default: {mode: proxy, allow: [model.test], deny: [10.0.0.0/8]}
  groups:
    - {group: agorusers, allow: ["*.pkg.test:443"]}
    - {group: open, mode: open}
  users:
    alice: {mode: none}
    bob: {allow: ["10.199.0.0/24"]}
`

func TestNetworkResolve(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(networkYAML))
	if err != nil {
		t.Fatal(err)
	}
	member := map[string][]string{"alice": {"agorusers"}, "bob": {"agorusers"}, "carol": nil, "dave": {"open"}}
	tests := []struct {
		user string
		want NetworkSet
	}{
		{"carol", NetworkSet{Mode: "proxy", Allow: []string{"model.test"}, Deny: []string{"10.0.0.0/8"}}},
		{"alice", NetworkSet{Mode: "none", Allow: []string{"model.test", "*.pkg.test:443"}, Deny: []string{"10.0.0.0/8"}}},
		{"bob", NetworkSet{Mode: "proxy", Allow: []string{"model.test", "*.pkg.test:443", "10.199.0.0/24"}, Deny: []string{"10.0.0.0/8"}}},
		{"dave", NetworkSet{Mode: "open", Allow: []string{"model.test"}, Deny: []string{"10.0.0.0/8"}}},
	}
	for _, tc := range tests {
		got, err := c.Network.For(tc.user, func(g string) (bool, error) { return slices.Contains(member[tc.user], g), nil })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.user, diff)
		}
	}
	if c.Network.Default.Policy().Decide(dst("model.test"), addr("10.1.1.1")).Allowed {
		t.Error("the default's deny 10.0.0.0/8 did not hold")
	}
}

func TestNetworkDefaultOpen(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.Network.Default.Mode != NetworkOpen || c.Network.Default.Private() {
		t.Errorf("default network %+v, want open", c.Network.Default)
	}
}

func TestNetworkErrors(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"network: {default: {mode: closed}}":                     `network.default.mode: "closed" is not open, proxy or none`,
		"network: {default: {mode: ''}}":                         "network.default.mode: missing",
		"network: {default: {mode: proxy, allow: ['a b']}}":      "network.default.allow[0]:",
		"network: {users: {alice: {deny: ['10.0.0.0/33']}}}":     "network.users.alice.deny[0]:",
		"network: {groups: [{group: 'x y', mode: none}]}":        "network.groups[0].group:",
		"network: {groups: [{group: g, mode: proxy, allw: []}]}": "unknown key allw",
		"network: {proxy_port: 0}":                               "network.proxy_port:",
		"network: {socket_path: egress.sock}":                    "network.socket_path:",
		"network: {max_connections_per_user: 0}":                 "network.max_connections_per_user:",
	}
	for in, want := range bad {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func dst(host string) netpolicy.Destination { return netpolicy.Destination{Host: host, Port: 80} }
func addr(s string) netip.Addr              { return netip.MustParseAddr(s) }
