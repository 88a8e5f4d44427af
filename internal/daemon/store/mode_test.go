package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The store holds everyone's prompts and transcripts: its files are 0600
// whatever the umask, and a file an earlier daemon left wider is narrowed.
// Not parallel: it sets the process's umask.
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, tc := range []struct {
		name string
		pre  os.FileMode // files there before Open, 0 for none
	}{{"new", 0}, {"left 0644", 0o644}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agor.db")
			if tc.pre != 0 {
				pre, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				seed(t, pre, Completed, "t0")
				for _, f := range []string{path, path + "-wal", path + "-shm"} {
					if err := os.Chmod(f, tc.pre); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
				}
				_ = pre.Close()
			}
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			seed(t, db, Completed, "t1") // writes: the WAL and its index exist
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				st, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if m := st.Mode().Perm(); m != 0o600 {
					t.Errorf("%s: mode %v, want 0600", filepath.Base(f), m)
				}
			}
		})
	}
}
