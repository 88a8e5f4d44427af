package sandbox

import (
	"archive/tar"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A confined task may not open what it can write to anyone else (issue
// 48): no ACL or other extended attribute set or removed, no file given
// to another group, no file made with more than the umask grants. Each
// test is judged by the file afterwards (its mode, group, getfacl and
// getfattr), in the plain launcher and in the view.

// levels are the two ways a workspace is confined: Landlock and the
// filter alone, and the view besides.
func levels(t *testing.T, work string) map[string]Spec {
	t.Helper()
	out := map[string]Spec{"plain": {Level: Workspace, Cwd: work}}
	if NamespacesWork(os.Args[0]) == nil {
		tmp := t.TempDir()
		out["view"] = Spec{Level: Workspace, Cwd: work, Writable: []string{tmp}, Temp: tmp, Namespaces: true}
	}
	return out
}

// attrs is what a file's ACL and extended attributes and mode are.
func attrs(t *testing.T, p string) string {
	t.Helper()
	acl, _ := exec.Command("getfacl", "-cp", p).CombinedOutput()
	xattr, _ := exec.Command("getfattr", "-hd", "-m", "-", p).CombinedOutput()
	fi, err := os.Lstat(p)
	if err != nil {
		return "absent"
	}
	return fi.Mode().String() + "\n" + string(acl) + string(xattr)
}

// groupWrites: whether a file's owning group may write it, by its ACL
// (the group's entry under the mask) or, without one, its mode.
func groupWrites(t *testing.T, p string) bool {
	t.Helper()
	out, err := exec.Command("getfacl", "-cp", p).Output()
	if err != nil {
		t.Fatalf("getfacl %s: %v", p, err)
	}
	group, mask := "---", "rwx"
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "group::"); ok && len(rest) >= 3 {
			group = rest[:3]
		}
		if rest, ok := strings.CutPrefix(l, "mask::"); ok && len(rest) >= 3 {
			mask = rest[:3]
		}
	}
	return group[1] == 'w' && mask[1] == 'w'
}

// needACLs skips where this filesystem or host has no ACL tools or
// support: it sets one outside first.
func needACLs(t *testing.T, dir string) {
	t.Helper()
	for _, tool := range []string{"setfacl", "getfacl", "setfattr", "getfattr"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	p := filepath.Join(dir, "acl-probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	if out, err := exec.Command("setfacl", "-m", "u:nobody:r", p).CombinedOutput(); err != nil {
		t.Skipf("no ACLs on %s: %v %s", dir, err, out)
	}
}

// TestAttrsRefused: a confined task sets no ACL (a named user's, a
// default one on a directory), no extended attribute by any tool, and
// removes no ACL the person set (which would leave the owning group the
// mask's rw); cp -a of a file with attributes still works, without them.
func TestAttrsRefused(t *testing.T) {
	needLandlock(t)
	for name, spec := range levels(t, "") {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			needACLs(t, work)
			spec.Cwd = work
			shared := filepath.Join(work, "shared") // her own ACL: bob may read
			for _, p := range []string{"f", "shared", "src"} {
				if err := os.WriteFile(filepath.Join(work, p), []byte(p), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(work, "d"), 0o750); err != nil {
				t.Fatal(err)
			}
			for _, c := range [][]string{{"setfacl", "-m", "u:nobody:rw,g::r", shared}, {"setfattr", "-n", "user.origin", "-v", "x", filepath.Join(work, "src")}} {
				if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v %s", c, err, out)
				}
			}
			before := map[string]string{}
			for _, p := range []string{"f", "d"} {
				before[p] = attrs(t, filepath.Join(work, p))
			}
			out, err := run(t, spec, work, `
				setfacl -m u:nobody:rw f; setfacl -d -m o::rwx d; setfattr -n user.x -v 1 f
				python3 -c 'import os; os.setxattr("f", "user.y", b"1")'
				setfattr -x system.posix_acl_access shared; setfacl -b shared
				cp -a src copy && echo copied`)
			if err != nil {
				t.Logf("the script: %v", err)
			}
			for p, was := range before {
				if now := attrs(t, filepath.Join(work, p)); now != was {
					t.Errorf("%s changed:\n%s\nwas:\n%s", p, now, was)
				}
			}
			if groupWrites(t, shared) { // setfacl -b narrowed it by chmod: that may be
				t.Errorf("her ACL was removed, and the owning group may write:\n%s", attrs(t, shared))
			}
			if !strings.Contains(out, "copied") {
				t.Errorf("cp -a of a file with an attribute failed: %s", out)
			}
			if !strings.Contains(out, "not supported") {
				t.Errorf("the refusals do not say EOPNOTSUPP: %s", out)
			}
			t.Logf("the task saw: %s", out)
		})
	}
}

// otherGroup is a group the test may give a file to outside the sandbox:
// any, as root; else one of its supplementary groups.
func otherGroup(t *testing.T) int {
	t.Helper()
	if os.Geteuid() == 0 {
		return 4242
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if g != os.Getgid() {
			return g
		}
	}
	t.Skip("no group but the primary one to give a file to")
	return 0
}

func gidOf(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Gid)
}

// TestChownGroupRefused: a confined task gives no file to another group
// (chgrp, chgrp -h on a link, Python's chown and fchown), while a chown
// to her own uid and group, or -1, still passes (npm and git do those).
func TestChownGroupRefused(t *testing.T) {
	needLandlock(t)
	g, own := otherGroup(t), os.Getgid()
	for name, spec := range levels(t, "") {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			spec.Cwd = work
			for _, p := range []string{"a", "b", "c", "mine"} {
				if err := os.WriteFile(filepath.Join(work, p), nil, 0o640); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("a", filepath.Join(work, "link")); err != nil {
				t.Fatal(err)
			}
			gs := itoa(g)
			out, _ := run(t, spec, work, `chgrp `+gs+` a; chgrp -h `+gs+` link
				python3 -c 'import os; os.chown("b", -1, `+gs+`)'; python3 -c 'import os; os.fchown(os.open("c", os.O_RDONLY), -1, `+gs+`)'
				chown `+itoa(os.Getuid())+`:`+itoa(own)+` mine && chown -h `+itoa(os.Getuid())+` link && echo own-ok`)
			for _, p := range []string{"a", "b", "c", "link", "mine"} {
				if got := gidOf(t, filepath.Join(work, p)); got != own {
					t.Errorf("%s was given to group %d (want %d, hers)", p, got, own)
				}
			}
			if !strings.Contains(out, "own-ok") {
				t.Errorf("a chown to her own uid and group failed: %s", out)
			}
			t.Logf("the task saw: %s", out)
		})
	}
}

// openTar writes a tar holding a 0777 directory and a 0666 file in it,
// as a package's might.
func openTar(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "open.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	for _, h := range []*tar.Header{
		{Name: "open-dir/", Typeflag: tar.TypeDir, Mode: 0o777},
		{Name: "open-dir/open-file", Typeflag: tar.TypeReg, Mode: 0o666, Size: 1},
	} {
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = w.Write([]byte("x"))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUmaskKept: after umask 0 a confined task still makes only what
// its umask grants (022, or 002 for a person's own group), by every way
// a file is made (mkdir, mkdir -p, open, mkfifo, O_TMPFILE, GNU tar),
// and a stricter umask still takes. In the view the umask it reads is
// its real one (sh, Python), so what it computes from it is what chmod
// allows, and the init's listener is not among its descriptors; without
// a view it reads 0.
func TestUmaskKept(t *testing.T) {
	needLandlock(t)
	tarball := openTar(t)
	for _, umask := range []int{0o022, 0o002} {
		for name, spec := range levels(t, "") {
			t.Run(fmt.Sprintf("%s/%03o", name, umask), func(t *testing.T) {
				old := syscall.Umask(umask)
				defer syscall.Umask(old)
				work := t.TempDir()
				spec.Cwd = work
				out, _ := run(t, spec, work, umaskScript(tarball))
				checkModes(t, work, umask, name == "view")
				read := fmt.Sprintf("python %O\nsh %04o\nlisteners 0", umask, umask)
				if name == "plain" { // tar then chmods open-dir 0777, which is refused
					read = "python 0o0\nsh 0000"
				}
				if !strings.Contains(out, read) || !strings.Contains(out, fmt.Sprintf("tmpfile %O", 0o666&^umask)) {
					t.Errorf("inside: %q, want %q and the O_TMPFILE's mode", out, read)
				}
			})
		}
	}
}

// umaskScript makes files every way after umask 0 and says what umask
// it reads. An O_TMPFILE's mode is its own to say: Landlock refuses
// linking one in (EXDEV).
func umaskScript(tarball string) string {
	return `umask 0
		mkdir d; mkdir -p p/q/r; echo x > f; mkfifo fifo
		python3 -c 'import os; print("tmpfile", oct(os.fstat(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o666)).st_mode & 0o777))'
		tar --no-same-permissions -xf ` + tarball + `
		python3 -c 'import os; print("python", oct(os.umask(0)))'
		echo sh $(umask)
		echo listeners $(ls -l /proc/self/fd/ | grep -c seccomp)
		(umask 077; echo x > private)`
}

// checkModes wants no file of umaskScript's with a bit umask withholds,
// and (exact) each with all it grants where the task reads its umask.
func checkModes(t *testing.T, work string, umask int, exact bool) {
	t.Helper()
	dir, file := os.FileMode(0o777&^umask), os.FileMode(0o666&^umask)
	want := map[string]os.FileMode{"d": dir, "p/q/r": dir, "p": dir, "f": file, "fifo": file,
		"open-dir": dir, "open-dir/open-file": file, "private": 0o600}
	for p, m := range want {
		fi, err := os.Lstat(filepath.Join(work, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if got := fi.Mode().Perm(); got&^m != 0 || (exact && got != m) {
			t.Errorf("%s: %v, want %v", p, got, m) // plain: tar's chmod to 0777 refused leaves 0700
		}
	}
}

// TestUmaskOf: the init reads a caller's umask by its number, through a
// pidfd where /proc is not its namespace's (as here: this process is not
// 1 in it), for a process and, from Linux 6.9, for any of its threads.
func TestUmaskOf(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	if m, err := umaskOf(os.Getpid()); err != nil || m != 0o027 {
		t.Errorf("this process's: %O %v, want 0o27", m, err)
	}
	tids, done := make(chan int), make(chan struct{})
	defer close(done)
	tid := os.Getpid()
	for i := 0; i < 2 && tid == os.Getpid(); i++ { // the first may be given the main thread, and keep it
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-done
		}()
		tid = <-tids
	}
	m, err := umaskOf(tid)
	t.Logf("thread %d of process %d: %O %v", tid, os.Getpid(), m, err)
	switch {
	case err != nil:
		t.Logf("thread %d: %v (before Linux 6.9 the init answers 0)", tid, err)
	case m != 0o027:
		t.Errorf("thread %d's: %O, want 0o27", tid, m)
	}
}
