package account

import (
	"errors"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"alice": true, "_svc": true, "bob-2": true, "a_b": true, "root": true,
		"": false, "Alice": false, "2bob": false, "-x": false, "al ice": false,
		"a/b": false, "a.b": false, "ünï": false, "a@b": false, "x\n": false,
		"abcdefghijklmnopqrstuvwxyzabcdef": true, "abcdefghijklmnopqrstuvwxyzabcdefg": false,
	} {
		err := ValidName(name)
		if (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidName(%q) error does not wrap ErrInvalidName", name)
		}
	}
}

func FuzzValidName(f *testing.F) {
	f.Add("alice")
	f.Add("../etc")
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(name) != nil {
			return
		}
		for _, c := range []byte(name) {
			if c == '/' || c == '.' || c == '@' || c == '\\' || c < 0x21 || c > 0x7e {
				t.Fatalf("accepted %q with %q", name, c)
			}
		}
	})
}
