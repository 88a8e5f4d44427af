// Package netpolicy decides whether a person's connection may go out: the
// allow and deny lists of the configuration's network section, matched
// against the name a client asked for and every address it resolved to.
package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of an allow or deny list, as written:
//
//	example.com         the name itself, any port
//	*.example.com       any name beneath it (not the name itself)
//	*                   any destination
//	10.0.0.0/8, 10.1.2.3, ::1, fd00::/8    addresses
//	example.com:443, *.example.com:443, 10.0.0.0/8:443, [fd00::/8]:443, *:443
type Rule struct {
	Text   string       // as written, named in decisions and audit records
	Name   string       // lower-case name, "*.suffix" or "*"; "" for addresses
	Prefix netip.Prefix // valid for address rules
	Port   uint16       // 0: any port
}

// MaxNameLen bounds a name in a rule or a request (DNS's own bound).
const MaxNameLen = 253

// ParseRule reads one list entry; the error says what is wrong with it.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	t := strings.TrimSpace(s)
	if t == "" {
		return r, errors.New("empty entry")
	}
	host, port, err := splitPort(t)
	if err != nil {
		return r, fmt.Errorf("%q: %v", s, err)
	}
	r.Port = port
	if p, ok := parseAddr(host); ok {
		r.Prefix = p
		return r, nil
	}
	name, err := ruleName(host)
	if err != nil {
		return r, fmt.Errorf("%q: %v", s, err)
	}
	r.Name = name
	return r, nil
}

// splitPort takes an optional ":port" off: "[v6]:port", "name:port",
// "cidr:port". A bare IPv6 address or prefix has no port.
func splitPort(t string) (string, uint16, error) {
	if strings.HasPrefix(t, "[") {
		end := strings.Index(t, "]")
		if end < 0 {
			return "", 0, errors.New("no closing ]")
		}
		host, rest := t[1:end], t[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, errors.New("text after ]")
		}
		p, err := parsePort(rest[1:])
		return host, p, err
	}
	if strings.Count(t, ":") != 1 {
		return t, 0, nil // a name, an IPv4 address, or IPv6 without a port
	}
	host, ps, _ := strings.Cut(t, ":")
	p, err := parsePort(ps)
	return host, p, err
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

func parseAddr(host string) (netip.Prefix, bool) {
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		return p.Masked(), err == nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), true
}

func ruleName(host string) (string, error) {
	if host == "*" {
		return host, nil
	}
	base, wild := strings.CutPrefix(host, "*.")
	if strings.Contains(base, "/") {
		return "", errors.New("not an address prefix (e.g. 10.0.0.0/8) nor a name")
	}
	n, err := CleanName(base)
	if err != nil {
		return "", err
	}
	if wild {
		return "*." + n, nil
	}
	return n, nil
}

// CleanName lower-cases a host name and checks it is one: letters,
// digits, '-', '_' and dots, labels of 1 to 63, at most 253 in all. A
// trailing dot is dropped.
func CleanName(host string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(host, "."))
	if n == "" || len(n) > MaxNameLen {
		return "", fmt.Errorf("a host name has 1 to %d characters", MaxNameLen)
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%q is not a host name (empty or long label)", host)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%q is not a host name (character %q)", host, c)
			}
		}
	}
	return n, nil
}

// Policy is one person's lists. Deny wins over allow; a destination no
// allow entry names is refused.
type Policy struct {
	Allow, Deny []Rule
}

// Parse reads allow and deny lists.
func Parse(allow, deny []string) (Policy, error) {
	var p Policy
	for i, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return Policy{}, fmt.Errorf("allow[%d]: %w", i, err)
		}
		p.Allow = append(p.Allow, r)
	}
	for i, s := range deny {
		r, err := ParseRule(s)
		if err != nil {
			return Policy{}, fmt.Errorf("deny[%d]: %w", i, err)
		}
		p.Deny = append(p.Deny, r)
	}
	return p, nil
}

// Decision is the answer for one address of a destination.
type Decision struct {
	Allowed bool
	// Rule names what decided: an entry as written ("allow *.example.com",
	// "deny 10.0.0.0/8"), "builtin loopback" and the like, or "not listed".
	Rule string
}

// Destination is what a client asked for: Host as it wrote it (a name or
// an address literal) and a port.
type Destination struct {
	Host string
	Port uint16
}

// Decide answers for dst reached at addr (one address the name resolved
// to, or the literal itself). A name is allowed by a name entry (or "*"),
// an address literal by an address entry; deny entries match the name
// and every address, so a name cannot smuggle in an address that is
// denied. Loopback, link-local, unspecified and multicast addresses
// are refused unless an allow entry names a prefix within their range
// (127.0.0.1, 169.254.169.254/32): neither a name nor "*" nor 0.0.0.0/0
// reaches them.
func (p Policy) Decide(dst Destination, addr netip.Addr) Decision {
	addr = addr.Unmap()
	for _, r := range p.Deny {
		if r.matches(dst, addr) {
			return Decision{Rule: "deny " + r.Text}
		}
	}
	if kind, rng := special(addr); kind != "" {
		for _, r := range p.Allow {
			if r.Name == "" && r.matches(dst, addr) && r.Prefix.Bits() >= rng.Bits() && rng.Contains(r.Prefix.Addr()) {
				return Decision{Allowed: true, Rule: "allow " + r.Text}
			}
		}
		return Decision{Rule: "builtin " + kind}
	}
	literal := isLiteral(dst.Host)
	for _, r := range p.Allow {
		if r.Name == "" && !literal {
			continue // a name is allowed by name: see Resolvable
		}
		if r.matches(dst, addr) {
			return Decision{Allowed: true, Rule: "allow " + r.Text}
		}
	}
	return Decision{Rule: "not listed"}
}

// Resolvable reports whether dst's name may be looked up at all: an allow
// entry names it and no deny entry does. A name nothing allows is never
// resolved, so a lookup cannot carry data out through DNS.
func (p Policy) Resolvable(dst Destination) bool {
	if isLiteral(dst.Host) {
		return false
	}
	for _, r := range p.Deny {
		if r.Name != "" && r.matches(dst, netip.Addr{}) {
			return false
		}
	}
	for _, r := range p.Allow {
		if r.Name != "" && r.matches(dst, netip.Addr{}) {
			return true
		}
	}
	return false
}

func isLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func (r Rule) matches(dst Destination, addr netip.Addr) bool {
	if r.Port != 0 && r.Port != dst.Port {
		return false
	}
	switch {
	case r.Name == "*":
		return true
	case r.Name == "":
		return addr.IsValid() && r.Prefix.Contains(addr)
	}
	host := strings.ToLower(strings.TrimSuffix(dst.Host, "."))
	if suffix, ok := strings.CutPrefix(r.Name, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == r.Name
}

// specials are the ranges no name may lead to: the host's own services,
// the local link (cloud metadata endpoints live there), "this host" and
// multicast.
var specials = []struct {
	kind string
	rng  netip.Prefix
}{
	{"metadata", netip.MustParsePrefix("fd00:ec2::254/128")},  // a cloud's instance metadata (AWS over IPv6)
	{"metadata", netip.MustParsePrefix("100.100.100.200/32")}, // (Alibaba Cloud)
	{"loopback", netip.MustParsePrefix("127.0.0.0/8")},
	{"loopback", netip.MustParsePrefix("::1/128")},
	{"link-local", netip.MustParsePrefix("169.254.0.0/16")},
	{"link-local", netip.MustParsePrefix("fe80::/10")},
	{"unspecified", netip.MustParsePrefix("0.0.0.0/8")},
	{"unspecified", netip.MustParsePrefix("::/128")},
	{"multicast", netip.MustParsePrefix("224.0.0.0/4")},
	{"multicast", netip.MustParsePrefix("ff00::/8")},
}

// Special names the kind of address a (loopback, link-local, metadata,
// unspecified, multicast, "invalid address"), "" for an ordinary one.
func Special(a netip.Addr) string {
	kind, _ := special(a.Unmap())
	return kind
}

func special(a netip.Addr) (string, netip.Prefix) {
	if !a.IsValid() {
		return "invalid address", netip.Prefix{}
	}
	for _, s := range specials {
		if s.rng.Contains(a) {
			return s.kind, s.rng
		}
	}
	return "", netip.Prefix{}
}
