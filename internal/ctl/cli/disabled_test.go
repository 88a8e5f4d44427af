package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agor-sh/agor/internal/disabled"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestDisabledRestore: agorctl disabled list names what the record
// holds; restore puts it back, says so, and exits 1 when something was
// left.
func TestDisabledRestore(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(t.TempDir(), "disabled.jsonl")
	var recs []disabled.Record
	for _, name := range []string{"a/.envrc", "b/.envrc"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		_ = syscall.Lstat(p, &st)
		if err := os.Rename(p, p+".agor-disabled"); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, disabled.Record{Path: p, Disabled: p + ".agor-disabled", Why: "settings", Dev: st.Dev, Ino: st.Ino})
	}
	if err := disabled.Append(record, recs); err != nil {
		t.Fatal(err)
	}
	r := agorctl(context.Background(), closedStdin{t}, "disabled", "list", "--record", record)
	if r.code != 0 || strings.Count(r.stdout, ".envrc.agor-disabled\tsettings") != 2 {
		t.Fatalf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "b/.envrc"), nil, 0o644); err != nil { // hers, since
		t.Fatal(err)
	}
	r = agorctl(context.Background(), closedStdin{t}, "disabled", "restore", "--record", record)
	if r.code != 1 || !strings.Contains(r.stdout, "restored "+filepath.Join(dir, "a/.envrc")+"\n") ||
		!strings.Contains(r.stdout, "left "+filepath.Join(dir, "b/.envrc")+": something else is there now") {
		t.Fatalf("restore: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a/.envrc")); err != nil || string(b) != "x" {
		t.Errorf("a/.envrc: %q %v", b, err)
	}
}

// TestUndonePrinted: exec prints what the guard put back in .git as put
// back, and what it disabled elsewhere as disabled, by its path.
func TestUndonePrinted(t *testing.T) {
	var b strings.Builder
	sandboxWarning(&b, &protocol.SandboxInfo{Level: "workspace", Enforced: true, Undone: []string{
		"config changed", "sub/.envrc: project settings (disabled: renamed .envrc.agor-disabled)"}})
	want := "warning: undid the confined command's change to .git/config changed: git would have run it outside the sandbox\n" +
		"warning: disabled what the confined command left that would run later outside the sandbox: sub/.envrc: project settings (disabled: renamed .envrc.agor-disabled)\n"
	if b.String() != want {
		t.Errorf("printed %q", b.String())
	}
}
