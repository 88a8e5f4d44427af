// Package account validates the Unix user names that become systemd unit
// instance names (agor-executor@NAME) and socket file names.
package account

import (
	"errors"
	"fmt"
)

// MaxNameLen is the longest accepted user name (utmp's limit).
const MaxNameLen = 32

// ErrInvalidName is wrapped by every refusal of ValidName.
var ErrInvalidName = errors.New("invalid user name")

// ValidName accepts the portable subset of user names: a lower-case
// letter or '_', then lower-case letters, digits, '_' or '-'. That subset
// needs no escaping in a unit instance name or a path, and it is the same
// rule the polkit rule applies, so the daemon never asks for a unit the
// rule would refuse. "root" is a valid name; refusing it is policy.
func ValidName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: must be 1 to %d characters", ErrInvalidName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return fmt.Errorf("%w %q: character %q at %d (want [a-z_][a-z0-9_-]*)", ErrInvalidName, name, c, i)
		}
	}
	return nil
}
