package modeltest

import (
	"strings"
	"testing"
)

// recall answers only a latest user message holding RecallMarker, with
// the user's earlier texts (not the agent's own <context> parts), bounded.
func TestRecall(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, c := range []struct {
		name   string
		texts  []string
		latest int
		want   string
		ok     bool
	}{
		{"plain turn", []string{"remember heron-3", "hello"}, 1, "", false},
		{"earlier turn asked", []string{RecallMarker, "hello"}, 1, "", false},
		{"recall", []string{"<session_context>cwd</session_context>", "remember  heron-3\n", "more", RecallMarker}, 3,
			RecallPrefix + "remember heron-3 / more", true},
		{"merged into one message", []string{"first", "tool done", RecallMarker}, 1, RecallPrefix + "first / tool done", true},
		{"nothing before", []string{RecallMarker}, 0, RecallPrefix, true},
	} {
		got, ok := recall(c.texts, c.latest)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = "word " + long
	}
	if got, _ := recall(append(many, RecallMarker), 40); len([]rune(got)) > recallTotalMax {
		t.Errorf("answer of %d runes, want at most %d", len([]rune(got)), recallTotalMax)
	}
}
