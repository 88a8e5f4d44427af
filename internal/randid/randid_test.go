package randid

import "testing"

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New(12)
		if len(id) != 24 || seen[id] {
			t.Fatalf("id %q (len %d, seen %v)", id, len(id), seen[id])
		}
		seen[id] = true
	}
}
