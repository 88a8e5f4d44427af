package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A confined task with a view of its own (Namespaces) is tried as an
// attacker would, class by class; each way out is judged by its effect
// on disk or on the process outside, never by an exit status alone.

// viewRig is a home with a workspace holding a repository and project
// settings, a private key beside it, and the process's state and temp.
type viewRig struct {
	home, work, state, tmp, key string
}

func newViewRig(t *testing.T) viewRig {
	t.Helper()
	home := t.TempDir()
	r := viewRig{home: home, work: filepath.Join(home, "proj"), state: filepath.Join(home, ".agent"),
		tmp: filepath.Join(home, "tmp"), key: filepath.Join(home, "id_key")}
	for _, d := range []string{r.work, r.state, r.tmp, filepath.Join(r.work, ".git/hooks"), filepath.Join(r.work, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		r.key:                                "secret",
		filepath.Join(home, ".bashrc"):       "# bashrc\n",
		filepath.Join(r.work, ".git/config"): "[core]\n\tbare = false\n",
		filepath.Join(r.work, ".claude/settings.json"): "{}\n",
		filepath.Join(r.work, "main.go"):               "package main\n",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r viewRig) spec() Spec {
	return Spec{Level: Workspace, Cwd: r.work, Writable: []string{r.state, r.tmp}, Temp: r.tmp, Namespaces: true}
}

func needNamespaces(t *testing.T) {
	t.Helper()
	needLandlock(t)
	if err := NamespacesWork(os.Args[0]); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
}

// sh runs script in the view and returns its output (the script's own
// failures are its business: the tests look at the effects).
func (r viewRig) sh(t *testing.T, script string) string {
	t.Helper()
	out, err := run(t, r.spec(), r.work, script)
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == ExitLauncher {
		t.Fatalf("the launcher failed: %s", out)
	}
	return out
}

func fileState(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return "absent"
	}
	b, _ := os.ReadFile(p)
	return fi.Mode().String() + " " + fi.ModTime().String() + " " + string(b)
}

// TestViewMetadataOutside: class 1, a file's mode, times and extended
// attributes outside the workspace, and files made with open modes after
// umask 0. Landlock does not govern metadata; a read-only mount does.
func TestViewMetadataOutside(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	before := map[string]string{r.key: fileState(t, r.key), filepath.Join(r.home, ".bashrc"): fileState(t, filepath.Join(r.home, ".bashrc"))}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	out := r.sh(t, `
		chmod 0644 `+r.key+`; chmod 0 `+r.home+`/.bashrc
		touch -d 2001-01-01 `+r.key+`
		python3 -c 'import os; os.setxattr("`+r.key+`", "user.x", b"1")' 2>&1
		setfacl -m u:nobody:rw `+r.home+`/.bashrc 2>&1
		umask 0; mkdir `+r.home+`/open-dir; echo x > `+r.home+`/open-file
		echo x >> `+r.home+`/.bashrc
		ln -s /etc/passwd `+r.home+`/link
		echo in > inside.txt && echo wrote-inside`)
	if !strings.Contains(out, "wrote-inside") {
		t.Fatalf("the workspace is not writable: %s", out)
	}
	for p, was := range before {
		if now := fileState(t, p); now != was {
			t.Errorf("%s changed: %q, was %q", p, now, was)
		}
	}
	if fi, err := os.Stat(r.key); err == nil && fi.ModTime().Equal(old) {
		t.Error("the key's times were changed")
	}
	if b, err := exec.Command("getfattr", "-d", r.key).CombinedOutput(); err == nil && strings.Contains(string(b), "user.x") {
		t.Errorf("an xattr was set: %s", b)
	}
	if b, err := exec.Command("getfacl", "-c", filepath.Join(r.home, ".bashrc")).Output(); err == nil && strings.Contains(string(b), "nobody") {
		t.Errorf("an ACL was set: %s", b)
	}
	for _, p := range []string{"open-dir", "open-file", "link"} {
		if _, err := os.Lstat(filepath.Join(r.home, p)); err == nil {
			t.Errorf("%s was made outside the workspace", p)
		}
	}
	t.Logf("the process saw: %s", out)
}

// TestViewProtected: class 2, what runs later unasked: the repository's
// config and hooks, the agent's project settings, and the ways around a
// read-only bind (rename .git away and make a new one, unmount, remount,
// a nested user namespace).
func TestViewProtected(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	watched := []string{".git/config", ".claude/settings.json", ".git/hooks/pre-commit", ".git/commondir"}
	before := map[string]string{}
	for _, w := range watched {
		before[w] = fileState(t, filepath.Join(r.work, w))
	}
	out := r.sh(t, `
		echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config
		printf '#!/bin/sh\ntouch pwned\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
		echo '{"hooks":{}}' > .claude/settings.json
		rm -rf .claude; mv .claude .c2; mv .git .g2; rm -rf .git/hooks
		umount .git/config; umount -l .claude
		mount -o remount,rw .git/config
		unshare -Urm sh -c 'umount .git/config; echo x >> .git/config' 2>&1
		echo done`)
	for _, w := range watched {
		if now := fileState(t, filepath.Join(r.work, w)); now != before[w] {
			t.Errorf("%s changed: %q, was %q", w, now, before[w])
		}
	}
	for _, p := range []string{".g2", ".c2"} {
		if _, err := os.Lstat(filepath.Join(r.work, p)); err == nil {
			t.Errorf("%s: a protected directory was renamed", p)
		}
	}
	if !strings.Contains(out, "done") {
		t.Fatalf("the script did not run: %s", out)
	}
}

// TestViewGitWorks: a confined agent still commits (objects, refs, the
// index and logs are writable), and the hooks it cannot change stay.
func TestViewGitWorks(t *testing.T) {
	needNamespaces(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := newViewRig(t)
	_ = os.RemoveAll(filepath.Join(r.work, ".git"))
	if out, err := exec.Command("git", "-C", r.work, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	out := r.sh(t, `export HOME=`+r.state+`
		git add main.go && git -c user.name=a -c user.email=a@b commit -qm one && git checkout -qb topic && echo committed`)
	if !strings.Contains(out, "committed") {
		t.Fatalf("git commit in the view: %s", out)
	}
	log, err := exec.Command("git", "-C", r.work, "log", "--oneline", "topic").CombinedOutput()
	if err != nil || !strings.Contains(string(log), "one") {
		t.Fatalf("the commit is not there: %v %s", err, log)
	}
}

// TestViewSignalsAndOrphans: class 3's orphans and signals, on any
// kernel: a process outside the task cannot be signalled (the PID
// namespace names none), and what the task leaves running in the
// background ends with it.
func TestViewSignalsAndOrphans(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer outside.Process.Kill()
	pid := outside.Process.Pid
	// A duration no other test's sleep has (packages' tests run side by
	// side, and some sleep 300), so that pgrep finds this one only.
	marker := "sleep 300." + itoa(os.Getpid())
	out := r.sh(t, "kill -TERM "+itoa(pid)+" 2>&1; ("+marker+"; echo late > "+r.work+"/late) & echo started")
	if !strings.Contains(out, "started") {
		t.Fatalf("%s", out)
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process outside was signalled: %v (%s)", err, out)
	}
	time.Sleep(100 * time.Millisecond)
	if b, err := exec.Command("pgrep", "-f", "^"+marker+"$").Output(); err == nil && len(b) > 0 {
		t.Errorf("the task's background process outlived it: %s", b)
	}
}

// TestViewTmp: /tmp is the task's own (the private temp directory), not
// the executor's shared one.
func TestViewTmp(t *testing.T) {
	needNamespaces(t)
	if !dirExists("/dev/shm") {
		t.Skip("no /dev/shm")
	}
	// The overlay needs a workspace outside /tmp (t.TempDir is in it).
	home, err := os.MkdirTemp("/dev/shm", "agor-view-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(home)
	r := viewRig{home: home, work: filepath.Join(home, "proj"), state: filepath.Join(home, ".agent"), tmp: filepath.Join(home, "tmp")}
	for _, d := range []string{r.work, r.state, r.tmp} {
		_ = os.MkdirAll(d, 0o755)
	}
	marker := filepath.Join(os.TempDir(), "agor-view-outside-"+itoa(os.Getpid()))
	_ = os.WriteFile(marker, []byte("x"), 0o600)
	defer os.Remove(marker)
	out := r.sh(t, "ls /tmp; echo mine > /tmp/mine && echo TMPDIR=$TMPDIR")
	if strings.Contains(out, filepath.Base(marker)) {
		t.Errorf("the task sees the shared /tmp: %s", out)
	}
	if b, err := os.ReadFile(filepath.Join(r.tmp, "mine")); err != nil || string(b) != "mine\n" {
		t.Errorf("/tmp is not the private temp directory: %v %q (%s)", err, b, out)
	}
	if !strings.Contains(out, "TMPDIR=/tmp") {
		t.Errorf("TMPDIR: %s", out)
	}
}

// TestViewABI2: the same protections with Landlock capped at Debian 12's
// ABI (2): the view does not depend on the newer rights.
func TestViewABI2(t *testing.T) {
	t.Setenv(ForceABIEnv, "2")
	t.Run("metadata", TestViewMetadataOutside)
	t.Run("protected", TestViewProtected)
	t.Run("signals", TestViewSignalsAndOrphans)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestViewWorkdirInTmp: a process whose working directory is in /tmp
// (a clone checked out there, a read-only task's cwd) keeps it: the
// private temp directory is then not laid over /tmp, which would hide it
// (the launcher failed "no such file or directory" when CI's clone was
// in /tmp).
func TestViewWorkdirInTmp(t *testing.T) {
	needNamespaces(t)
	if !dirExists("/dev/shm") {
		t.Skip("no /dev/shm")
	}
	elsewhere, err := os.MkdirTemp("/dev/shm", "agor-view-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(elsewhere)
	tmp := filepath.Join(elsewhere, "tmp")
	_ = os.Mkdir(tmp, 0o700)
	wd := t.TempDir() // in /tmp
	spec := Spec{Level: ReadOnly, Cwd: wd, Writable: []string{tmp}, Temp: tmp, Namespaces: true}
	out, err := run(t, spec, wd, "pwd")
	if err != nil || strings.TrimSpace(out) != wd {
		t.Fatalf("in %s: %v %q", wd, err, out)
	}
}
