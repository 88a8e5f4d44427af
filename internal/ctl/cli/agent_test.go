package cli

import (
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// --continue takes her session in this directory updated last: not
// another person's, not another directory's, not another tool's when
// --tool was given; a tie goes to the one created later.
func TestLastSession(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 12, 2, 10, m, 0, 0, time.UTC) }
	all := []apiwire.SessionView{
		{ID: "old", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "src/app", CreatedAt: at(0), UpdatedAt: at(5)},
		{ID: "codex", UnixUser: "alice", AgenticTool: "codex", Cwd: "src/app", CreatedAt: at(1), UpdatedAt: at(9)},
		{ID: "new", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "src/app", CreatedAt: at(2), UpdatedAt: at(7)},
		{ID: "tie", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "src/app", CreatedAt: at(3), UpdatedAt: at(7)},
		{ID: "bob", UnixUser: "bob", AgenticTool: "claude-code", Cwd: "src/app", CreatedAt: at(4), UpdatedAt: at(20)},
		{ID: "elsewhere", UnixUser: "alice", AgenticTool: "claude-code", Cwd: "src/lib", CreatedAt: at(4), UpdatedAt: at(30)},
	}
	for _, c := range []struct {
		user, cwd, tool, want string
	}{
		{"alice", "src/app", "", "codex"},
		{"alice", "src/app", "claude-code", "tie"},
		{"alice", "src/lib", "", "elsewhere"},
		{"bob", "src/app", "", "bob"},
		{"alice", "src/none", "", ""},
		{"alice", "src/app", "gemini", ""},
	} {
		got, ok := lastSession(all, c.user, c.cwd, c.tool)
		if got.ID != c.want || ok != (c.want != "") {
			t.Errorf("lastSession(%s, %s, %q) = %q, %v; want %q", c.user, c.cwd, c.tool, got.ID, ok, c.want)
		}
	}
}
