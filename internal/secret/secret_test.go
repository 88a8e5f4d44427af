package secret

import "testing"

func TestNew(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New()
	if len(a) != 43 || a == b || Hash(a) == Hash(b) || Hash(a) != Hash(string([]byte(a))) {
		t.Fatalf("tokens %q %q", a, b)
	}
}
