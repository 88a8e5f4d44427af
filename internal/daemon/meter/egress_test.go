package meter

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/gateway"
)

// A model request goes by its person's egress rules: mode none lets
// nothing out, proxy what her lists allow at every address the
// upstream's name has; open, and bob, are not touched.
func TestGatewayGoesByEgressRules(t *testing.T) {
	for _, c := range []struct {
		name, upstream string
		set            config.NetworkSet
		refused        string // in the refusal's message; "" granted
	}{
		{"open", "http://127.0.0.1:9/a", config.NetworkSet{Mode: "open"}, ""},
		{"none", "http://127.0.0.1:9/a", config.NetworkSet{Mode: "none"}, "(mode none;"},
		{"proxy, loopback not listed", "http://127.0.0.1:9/a", config.NetworkSet{Mode: "proxy", Allow: []string{"*"}}, "reach 127.0.0.1:9 ("},
		{"proxy, loopback listed", "http://127.0.0.1:9/a", config.NetworkSet{Mode: "proxy", Allow: []string{"127.0.0.1:9"}}, ""},
		{"proxy, listed and denied", "http://127.0.0.1:9/a", config.NetworkSet{Mode: "proxy", Allow: []string{"127.0.0.1:9"}, Deny: []string{"127.0.0.0/8"}}, "(deny 127.0.0.0/8;"},
		{"proxy, a name listed", "https://api.example.test/v1", config.NetworkSet{Mode: "proxy", Allow: []string{"api.example.test:443"}}, ""},
		{"proxy, a name not listed", "https://api.example.test/v1", config.NetworkSet{Mode: "proxy", Allow: []string{"other.test"}}, "(not listed;"},
		{"proxy, a name at a denied address", "https://api.example.test/v1", config.NetworkSet{Mode: "proxy", Allow: []string{"api.example.test"}, Deny: []string{"203.0.113.0/24"}}, "(deny 203.0.113.0/24;"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.cfg.Upstreams["anthropic"] = c.upstream
			w.m.Network = func(_ context.Context, person string) (config.NetworkSet, error) {
				if person == "alice" {
					return c.set, nil
				}
				return config.NetworkSet{Mode: "open"}, nil
			}
			w.m.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
				if host != "api.example.test" {
					t.Errorf("resolved %s", host)
				}
				return []netip.Addr{netip.MustParseAddr("203.0.113.5")}, nil
			}
			_, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Signer.Token("t-s-alice", "s-alice", alice))
			_, own := w.m.AuthorizeOwn(from(alice), gateway.Anthropic, "", w.m.Signer.Token("t-s-alice", "s-alice", alice))
			for _, err := range []error{err, own} {
				var r *gateway.Refusal
				switch {
				case c.refused == "" && err != nil:
					t.Errorf("refused: %v", err)
				case c.refused != "" && (!errors.As(err, &r) || r.Status != 403 || !strings.Contains(r.Message, c.refused) ||
					!strings.HasPrefix(r.Message, "agor: alice's network rules do not let her model requests reach ")):
					t.Errorf("got %v, want a 403 saying %q", err, c.refused)
				}
			}
			if _, err := w.m.Authorize(from(bob), gateway.Anthropic, w.m.Signer.Token("t-s-bob", "s-bob", bob)); err != nil {
				t.Errorf("bob (open) refused: %v", err)
			}
		})
	}
}

// Rules that cannot be read refuse, rather than let out.
func TestGatewayEgressRulesUnreadable(t *testing.T) {
	w := newWorld(t)
	w.m.Network = func(context.Context, string) (config.NetworkSet, error) {
		return config.NetworkSet{}, errors.New("no such user")
	}
	_, err := w.m.Authorize(from(alice), gateway.Anthropic, w.m.Signer.Token("t-s-alice", "s-alice", alice))
	var r *gateway.Refusal
	if !errors.As(err, &r) || r.Message != "agor: the network rules for alice could not be read" {
		t.Fatalf("got %v", err)
	}
}
