package account

import (
	"fmt"
	"strconv"
	"strings"
)

// Escape is systemd-escape's escaping of a unit instance name: letters,
// digits, ':', '_' and '.' stay (a leading '.' does not); every other byte,
// '-' and '\' included, becomes \xNN. It is what goes between '@' and the
// unit's suffix, and into %i; %I gives the unit the name back.
func Escape(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plain(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, `\x%02x`, c)
	}
	return b.String()
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.'
}

// Unescape reverses Escape. It refuses what Escape never makes, so an
// instance name has exactly one user name.
func Unescape(inst string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(inst); i++ {
		c := inst[i]
		if c != '\\' {
			if !plain(c) || (i == 0 && c == '.') {
				return "", fmt.Errorf("%w: instance %q: %q is not escaped", ErrInvalidName, inst, c)
			}
			b.WriteByte(c)
			continue
		}
		if i+4 > len(inst) || inst[i+1] != 'x' {
			return "", fmt.Errorf("%w: instance %q: bad escape at %d", ErrInvalidName, inst, i)
		}
		v, err := strconv.ParseUint(inst[i+2:i+4], 16, 8)
		if err != nil || inst[i+2:i+4] != fmt.Sprintf("%02x", v) || (plain(byte(v)) && !(i == 0 && v == '.')) {
			return "", fmt.Errorf("%w: instance %q: bad escape at %d", ErrInvalidName, inst, i)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// MaxSocketPath is the longest Unix socket path the kernel takes
// (sun_path is 108 bytes with its NUL).
const MaxSocketPath = 107

// SocketPath puts name's escaped form into template's "{user}" and checks
// the result fits a Unix socket address.
func SocketPath(template, name string) (string, error) {
	p := strings.Replace(template, "{user}", Escape(name), 1)
	if len(p) > MaxSocketPath {
		return "", fmt.Errorf("%w %q: its socket path %s is %d bytes, more than a Unix socket takes (%d)",
			ErrInvalidName, name, p, len(p), MaxSocketPath)
	}
	return p, nil
}
