package fsroot

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes root/{a/b/file, link-in -> a/b, link-out -> /etc, abs-in -> root/a}.
func tree(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "a", "b", "file"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	must(t, os.Symlink("a/b", filepath.Join(root, "link-in")))
	must(t, os.Symlink("/etc", filepath.Join(root, "link-out")))
	must(t, os.Symlink("../outside", filepath.Join(root, "dotdot-out")))
	must(t, os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "abs-in")))
	return root, outside
}

func TestResolve(t *testing.T) {
	for name, probe := range map[string]func(int) bool{"openat2": haveOpenat2, "os.Root fallback": func(int) bool { return false }} {
		t.Run(name, func(t *testing.T) { testResolve(t, probe) })
	}
}

func testResolve(t *testing.T, probe func(int) bool) {
	root, outside := tree(t)
	r, err := open(root, probe)
	must(t, err)
	defer r.Close()
	tests := []struct {
		path   string
		escape bool
	}{
		{"a/b/file", false},
		{"./a/../a/b/file", false},
		{"link-in/file", false},
		{filepath.Join(root, "a/b/file"), false},
		{"../outside/secret", true},
		{"a/../../outside/secret", true},
		{"/etc/passwd", true},
		{filepath.Join(outside, "secret"), true},
		{"link-out/passwd", true},
		{"dotdot-out/secret", true},
		{"abs-in/b/file", true}, // absolute symlinks are refused even inside
		{"/proc/self/root/etc/passwd", true},
		{"a\x00b", true},
	}
	for _, tc := range tests {
		f, err := r.OpenFile(tc.path, unix.O_RDONLY, 0)
		if f != nil {
			f.Close()
		}
		if got := errors.Is(err, ErrEscape); got != tc.escape {
			t.Errorf("OpenFile(%q): escape=%v (err %v), want escape=%v", tc.path, got, err, tc.escape)
		}
		if !tc.escape && err != nil {
			t.Errorf("OpenFile(%q): %v", tc.path, err)
		}
	}
}

// A symlink swapped in while lookups run never lets one out: every open
// either fails or reads the inside file.
func TestSwappedSymlink(t *testing.T) {
	root, outside := tree(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	must(t, os.MkdirAll(filepath.Join(root, "safe"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "safe", "secret"), []byte("inside"), 0o644))
	swap := filepath.Join(root, "swap")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			target := "safe"
			if i%2 == 1 {
				target = outside
			}
			tmp := swap + ".tmp"
			_ = os.Remove(tmp)
			_ = os.Symlink(target, tmp)
			_ = os.Rename(tmp, swap)
		}
	}()
	leaked := 0
	for range 5000 {
		f, err := r.OpenFile("swap/secret", unix.O_RDONLY, 0)
		if err != nil {
			continue
		}
		b := make([]byte, 16)
		n, _ := f.Read(b)
		f.Close()
		if string(b[:n]) != "inside" {
			leaked++
		}
	}
	stop.Store(true)
	wg.Wait()
	if leaked > 0 {
		t.Fatalf("read the outside file %d times through a swapped symlink", leaked)
	}
}

// FuzzResolve: whatever the path, a file that opens is inside the root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a/b/file", "../x", "link-out/passwd", "link-in/../../outside/secret", "/", "//a", ".", "a/./b/../b/file", "abs-in"} {
		f.Add(s)
	}
	root, _ := tree(f)
	r, err := Open(root)
	must(f, err)
	f.Cleanup(func() { r.Close() })
	f.Fuzz(func(t *testing.T, p string) {
		file, err := r.OpenFile(p, unix.O_RDONLY, 0)
		if err != nil {
			return
		}
		defer file.Close()
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		if real != root && !strings.HasPrefix(real, root+"/") {
			t.Fatalf("%q opened %s, outside %s", p, real, root)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
