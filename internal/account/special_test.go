package account

import (
	"errors"
	"testing"
)

func TestSpecial(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		uid     uint32
		refused bool
	}{
		{"nobody", 65534, true},
		{"nobody", 99, true}, // older systems' nobody
		{"nfsnobody", 65534, true},
		{"nfsnobody", 4294967294, true},
		{"overflow", 65534, true},
		{"minus1", 65535, true},
		{"minus1", 4294967295, true},
		{"dyn", 61184, true},
		{"dyn", 65519, true},
		{"alice", 1000, false},
		{"homed", 60001, false},
		{"homed", 60513, false},
		{"beforedyn", 61183, false},
		{"afterdyn", 65520, false},
		{"ad-user", 1_000_000_001, false}, // sssd's id mapping
	} {
		err := Special(tc.name, tc.uid)
		if got := err != nil; got != tc.refused {
			t.Errorf("Special(%q, %d) = %v, want refused %v", tc.name, tc.uid, err, tc.refused)
		}
		if err != nil && !errors.Is(err, ErrSpecial) {
			t.Errorf("Special(%q, %d) = %v, not ErrSpecial", tc.name, tc.uid, err)
		}
	}
}
