package disabled

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// disable renames path as the guard does and returns its record.
func disable(t *testing.T, path string) Record {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".agor-disabled"); err != nil {
		t.Fatal(err)
	}
	return Record{Path: path, Disabled: path + ".agor-disabled", Why: "test", Dev: uint64(st.Dev), Ino: st.Ino}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRestore: each recorded thing goes back where it was, a directory
// with the mode it had, a config over the one the guard wrote in its
// place; what is something else now, or was replaced since, is left and
// kept in the record; what is restored or gone leaves it.
func TestRestore(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "state", "disabled.jsonl")
	write(t, filepath.Join(dir, "a/.envrc"), "curl x | sh")
	write(t, filepath.Join(dir, "cut/x"), "")
	write(t, filepath.Join(dir, "repo/config"), "[core]\n\tfsmonitor = x\n")
	write(t, filepath.Join(dir, "taken/.vscode/tasks.json"), "{}")
	write(t, filepath.Join(dir, "swapped/.mcp.json"), "{}")
	envrc, cut := disable(t, filepath.Join(dir, "a/.envrc")), disable(t, filepath.Join(dir, "cut"))
	mode := uint32(0o755)
	cut.Mode = &mode
	_ = os.Chmod(cut.Disabled, 0)
	cfg := disable(t, filepath.Join(dir, "repo/config"))
	write(t, cfg.Path, "") // the guard's config of the inert keys
	var st unix.Stat_t
	_ = unix.Lstat(cfg.Path, &st)
	cfg.Written = st.Ino
	taken := disable(t, filepath.Join(dir, "taken/.vscode"))
	write(t, taken.Path, "hers, since")
	swapped := disable(t, filepath.Join(dir, "swapped/.mcp.json"))
	write(t, swapped.Disabled+".new", "another") // a new inode, before the old one is freed
	if err := os.Rename(swapped.Disabled+".new", swapped.Disabled); err != nil {
		t.Fatal(err)
	}
	gone := Record{Path: filepath.Join(dir, "gone"), Disabled: filepath.Join(dir, "gone.agor-disabled")}
	if err := Append(ledger, []Record{envrc, cut, cfg, taken, swapped, gone}); err != nil {
		t.Fatal(err)
	}
	out, err := Restore(ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	restored := map[string]bool{}
	for _, o := range out {
		restored[o.Path] = o.Restored
		t.Logf("%s: %v %s", o.Path, o.Restored, o.Note)
	}
	for p, want := range map[string]bool{envrc.Path: true, cut.Path: true, cfg.Path: true, taken.Path: false, swapped.Path: false, gone.Path: false} {
		if restored[p] != want {
			t.Errorf("%s restored %v, want %v", p, restored[p], want)
		}
	}
	if b, _ := os.ReadFile(cfg.Path); string(b) != "[core]\n\tfsmonitor = x\n" {
		t.Errorf("config %q", b)
	}
	if fi, err := os.Stat(cut.Path); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the cut directory: %v %v", fi, err)
	}
	left, err := Load(ledger)
	if err != nil || len(left) != 2 || left[0].Path != taken.Path || left[1].Path != swapped.Path {
		t.Errorf("left in the record: %+v %v", left, err)
	}
}

// TestRestoreBeneath: only what lies at or beneath a path named.
func TestRestoreBeneath(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "disabled.jsonl")
	write(t, filepath.Join(dir, "one/.envrc"), "")
	write(t, filepath.Join(dir, "two/.envrc"), "")
	if err := Append(ledger, []Record{disable(t, filepath.Join(dir, "one/.envrc")), disable(t, filepath.Join(dir, "two/.envrc"))}); err != nil {
		t.Fatal(err)
	}
	out, err := Restore(ledger, []string{filepath.Join(dir, "two") + "/"})
	if err != nil || len(out) != 1 || !out[0].Restored || out[0].Path != filepath.Join(dir, "two/.envrc") {
		t.Fatalf("%+v %v", out, err)
	}
	if left, _ := Load(ledger); len(left) != 1 || left[0].Path != filepath.Join(dir, "one/.envrc") {
		t.Errorf("left %+v", left)
	}
}

// TestAppendBounded: past its bound the record drops what is gone.
func TestAppendBounded(t *testing.T) {
	dir, ledger := t.TempDir(), filepath.Join(t.TempDir(), "disabled.jsonl")
	write(t, filepath.Join(dir, ".envrc"), "")
	live := disable(t, filepath.Join(dir, ".envrc"))
	big := Record{Path: "/gone", Disabled: "/gone.agor-disabled", Why: strings.Repeat("x", 1<<20)}
	gone := make([]Record, 200)
	for i := range gone {
		gone[i] = big
	}
	for range 10 {
		if err := Append(ledger, append(gone, live)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(ledger)
	if err != nil || fi.Size() > 2*maxBytes {
		t.Fatalf("the record grew to %v (%v)", fi.Size(), err)
	}
	if recs, err := Load(ledger); err != nil || len(recs) < 2 || recs[0] != live {
		t.Errorf("the live record was not kept first: %d records, %v", len(recs), err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}
