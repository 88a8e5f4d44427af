// Package account validates the Unix user names that become systemd unit
// instance names (agor-executor@NAME) and socket file names, and escapes
// them the way systemd does (systemd-escape), so that any name systemd
// runs User= for can be served.
package account

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds a user name. systemd's relaxed rules set no length;
// the bound comes from the socket path: /run/agor/executors/ + the escaped
// name (up to 4 bytes per byte) + ".sock" must fit sun_path's 108 bytes in
// the worst case, and 256 keeps every name a directory can hold usable
// when it is plain ASCII. SocketPath checks the real length.
const MaxNameLen = 256

// ErrInvalidName is wrapped by every refusal of ValidName.
var ErrInvalidName = errors.New("invalid user name")

// ValidName accepts what systemd accepts for User= (its "relaxed" user
// name rules: john.smith, Jane, jsmith@corp.example are all fine) and
// refuses what it refuses or what is unsafe here, saying why: an empty or
// all-numeric name (systemd would take it for a uid), "." and "..", '/'
// and ':' (paths and /etc/passwd), control characters, invalid UTF-8, and
// white space, which systemd allows inside a name but which the files and
// commands that list accounts (bearer tokens, shell scripts) split on. "root" is a valid name; refusing it is
// policy.
func ValidName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case len(name) > MaxNameLen:
		why = fmt.Sprintf("longer than %d bytes", MaxNameLen)
	case name == "." || name == "..":
		why = "a path component, not a name"
	case allDigits(name):
		why = "all digits, which systemd takes for a uid"
	case !utf8.ValidString(name):
		why = "not valid UTF-8"
	case strings.ContainsAny(name, "/:"):
		why = "contains '/' or ':'"
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		why = "contains white space (unsafe in the files and commands that name accounts)"
	case hasControl(name):
		why = "contains a control character"
	default:
		return nil
	}
	return fmt.Errorf("%w %s: %s", ErrInvalidName, strconv.Quote(name), why)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}
