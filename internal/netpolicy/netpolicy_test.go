package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	good := map[string]Rule{
		"Example.COM.":        {Name: "example.com"},
		"*.example.com":       {Name: "*.example.com"},
		"*":                   {Name: "*"},
		"*:443":               {Name: "*", Port: 443},
		"example.com:443":     {Name: "example.com", Port: 443},
		"10.1.2.3":            {Prefix: netip.MustParsePrefix("10.1.2.3/32")},
		"10.1.2.3/8":          {Prefix: netip.MustParsePrefix("10.0.0.0/8")},
		"10.0.0.0/8:8080":     {Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 8080},
		"fd00::/8":            {Prefix: netip.MustParsePrefix("fd00::/8")},
		"::1":                 {Prefix: netip.MustParsePrefix("::1/128")},
		"[fd00::/8]:443":      {Prefix: netip.MustParsePrefix("fd00::/8"), Port: 443},
		"[2001:db8::1]:22":    {Prefix: netip.MustParsePrefix("2001:db8::1/128"), Port: 22},
		"registry_x.internal": {Name: "registry_x.internal"},
	}
	for in, want := range good {
		got, err := ParseRule(in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", in, err)
			continue
		}
		want.Text = in
		if got != want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", in, got, want)
		}
	}
	bad := map[string]string{
		"":                               "empty",
		"example.com:0":                  "port",
		"example.com:x":                  "port",
		"example.com:1:2":                "character",
		"exa mple.com":                   "character",
		"10.0.0.0/33":                    "prefix",
		"*.":                             "host name",
		"a..b":                           "label",
		"[fd00::/8":                      "]",
		"[fd00::]x":                      "after ]",
		"ex*.com":                        "character",
		strings.Repeat("a", 64) + ".com": "label",
		"http://example.com":             "port",
	}
	for in, frag := range bad {
		if _, err := ParseRule(in); err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("ParseRule(%q) error %v, want one about %q", in, err, frag)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p, err := Parse(
		[]string{"model.test", "*.pkg.test:443", "10.199.0.0/24:8080", "127.0.0.1:9", "*:22"},
		[]string{"secret.pkg.test", "10.199.0.66", "192.0.2.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr
	tests := []struct {
		host string
		port uint16
		addr string
		want Decision
	}{
		{"model.test", 80, "10.199.0.2", Decision{true, "allow model.test"}},
		{"MODEL.test.", 80, "10.199.0.2", Decision{true, "allow model.test"}},
		{"other.test", 80, "10.199.0.2", Decision{false, "not listed"}},
		{"a.pkg.test", 443, "10.199.0.3", Decision{true, "allow *.pkg.test:443"}},
		{"a.pkg.test", 80, "10.199.0.3", Decision{false, "not listed"}},
		{"pkg.test", 443, "10.199.0.3", Decision{false, "not listed"}},
		{"secret.pkg.test", 443, "10.199.0.3", Decision{false, "deny secret.pkg.test"}},
		// A listed name that resolves to a denied address is refused by the address.
		{"model.test", 80, "192.0.2.7", Decision{false, "deny 192.0.2.0/24"}},
		{"10.199.0.9", 8080, "10.199.0.9", Decision{true, "allow 10.199.0.0/24:8080"}},
		// An address entry allows literals only: names need a name entry.
		{"other.test", 8080, "10.199.0.9", Decision{false, "not listed"}},
		{"10.199.0.66", 8080, "10.199.0.66", Decision{false, "deny 10.199.0.66"}},
		// No name reaches loopback or the link; an address entry within the range does.
		{"model.test", 80, "127.0.0.1", Decision{false, "builtin loopback"}},
		{"anything", 22, "169.254.169.254", Decision{false, "builtin link-local"}},
		{"anything", 22, "::1", Decision{false, "builtin loopback"}},
		{"127.0.0.1", 9, "127.0.0.1", Decision{true, "allow 127.0.0.1:9"}},
		{"anything", 22, "::ffff:10.0.0.1", Decision{true, "allow *:22"}},
		{"anything", 22, "0.0.0.0", Decision{false, "builtin unspecified"}},
		{"anything", 22, "224.0.0.1", Decision{false, "builtin multicast"}},
	}
	for _, tc := range tests {
		got := p.Decide(Destination{Host: tc.host, Port: tc.port}, ip(tc.addr))
		if got != tc.want {
			t.Errorf("Decide(%s:%d at %s) = %+v, want %+v", tc.host, tc.port, tc.addr, got, tc.want)
		}
	}
	for host, want := range map[string]bool{"model.test": true, "x.pkg.test": true, "secret.pkg.test": false, "other.test": false, "10.199.0.9": false} {
		if got := p.Resolvable(Destination{Host: host, Port: 443}); got != want {
			t.Errorf("Resolvable(%s) = %v, want %v", host, got, want)
		}
	}
	// 0.0.0.0/0 is not an entry within loopback's range.
	wide, _ := Parse([]string{"0.0.0.0/0"}, nil)
	if d := wide.Decide(Destination{Host: "127.0.0.1", Port: 80}, ip("127.0.0.1")); d.Allowed {
		t.Errorf("0.0.0.0/0 allowed loopback: %+v", d)
	}
	if d := (Policy{}).Decide(Destination{Host: "x.test", Port: 80}, ip("10.0.0.1")); d.Allowed || d.Rule != "not listed" {
		t.Errorf("empty policy: %+v", d)
	}
}

// FuzzParseRule: any text from a configuration file gives a rule or an
// error, never a panic, and a parsed rule decides without one.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"*.example.com:443", "[fd00::/8]:443", "10.0.0.0/8", "::1", "a..b", "[", "*:0"} {
		f.Add(s, "x.example.com", uint16(443))
	}
	f.Fuzz(func(t *testing.T, s, host string, port uint16) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.Name == "" && !r.Prefix.IsValid() {
			t.Fatalf("%q parsed to neither a name nor a prefix", s)
		}
		p := Policy{Allow: []Rule{r}}
		p.Decide(Destination{Host: host, Port: port}, netip.MustParseAddr("10.0.0.1"))
	})
}
