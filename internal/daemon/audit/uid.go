package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// UID is a uid a record names, or none (the zero value). It is a value,
// not a pointer, so records stay comparable for Aggregate.
type UID struct {
	uid uint32
	set bool
}

// UIDOf is uid as a record field.
func UIDOf(uid uint32) UID { return UID{uid: uid, set: true} }

// StoredUID is a uid as the stores keep it: negative is none (data
// recorded before uids were, whose account was gone by then).
func StoredUID(uid int64) UID {
	if uid < 0 || uid > int64(^uint32(0)) {
		return UID{}
	}
	return UIDOf(uint32(uid))
}

// Get returns the uid and whether there is one.
func (u UID) Get() (uint32, bool) { return u.uid, u.set }

// IsZero reports whether there is no uid (json omitzero).
func (u UID) IsZero() bool { return !u.set }

// String is the uid in decimal, or "" for none.
func (u UID) String() string {
	if !u.set {
		return ""
	}
	return strconv.FormatUint(uint64(u.uid), 10)
}

// MarshalJSON writes the uid as a number, none as null.
func (u UID) MarshalJSON() ([]byte, error) {
	if !u.set {
		return []byte("null"), nil
	}
	return strconv.AppendUint(nil, uint64(u.uid), 10), nil
}

// UnmarshalJSON reads a number or null.
func (u *UID) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*u = UID{}
		return nil
	}
	var n uint32
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*u = UIDOf(n)
	return nil
}

// Equal reports whether u and v are the same uid, or both none.
func (u UID) Equal(v UID) bool { return u == v }
