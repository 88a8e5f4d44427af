package umask

import "testing"

func TestLogin(t *testing.T) {
	t.Parallel()
	debian := []byte("# comment\nUMASK\t\t022\nUSERGROUPS_ENAB yes\n")
	alice := Account{Name: "alice", UID: 1000, Group: "alice"}
	for _, tc := range []struct {
		name string
		a    Account
		defs []byte
		want uint32
	}{
		{"Debian's login.defs, user private group", alice, debian, 0o002},
		{"Debian's login.defs, shared group", Account{Name: "bob", UID: 1001, Group: "staff"}, debian, 0o022},
		{"no user private groups", alice, []byte("UMASK 027\n"), 0o027},
		{"077 with user private groups", alice, []byte("UMASK 077\nUSERGROUPS_ENAB yes\n"), 0o007},
		{"GECOS first", Account{Name: "carol", UID: 1002, Group: "carol", GECOS: "Carol,,,,umask=0077"}, debian, 0o077},
		{"a bad GECOS umask is ignored", Account{Name: "dan", UID: 1003, Group: "users", GECOS: "umask=999"}, debian, 0o022},
		{"no login.defs", alice, nil, 0o022},
		{"a bad UMASK is ignored", Account{Name: "eve", UID: 1004, Group: "users"}, []byte("UMASK 8\n"), 0o022},
		{"commented out", Account{Name: "fay", UID: 1005, Group: "users"}, []byte("#UMASK 077\n"), 0o022},
	} {
		if got, src := Login(tc.a, tc.defs); got != tc.want {
			t.Errorf("%s: %#o (%s), want %#o", tc.name, got, src, tc.want)
		}
	}
}
