package sandbox

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/gitguard"
)

// What agents run to set a project up, run in the view as the executor
// runs a confined task (its environment from Spec.Env, her home
// read-only), and then judged by the post-run guard as the executor
// judges it: each tool must work, and leave nothing the guard disables.

// npmTarball writes a package as npm packs one (package/ in a gzip'd
// tar), with a bin left 0644 for npm to chmod.
func npmTarball(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agor-hello-1.0.0.tgz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := gzip.NewWriter(f)
	w := tar.NewWriter(z)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"agor-hello","version":"1.0.0","bin":{"agor-hello":"cli.js"}}`,
		"package/cli.js":       "#!/usr/bin/env node\nconsole.log('hello-ran')\n",
	} {
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if w.Close() != nil || z.Close() != nil {
		t.Fatal("tarball not written")
	}
	return p
}

// gitEnv is git as a person with no configuration of her own runs it.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a",
		"GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
}

// gitOut runs git in dir, unconfined, and fails the test when it fails.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// npmGitRepo makes a git repository (branch main) holding an npm package
// with a bin, as a project's git dependency names one: npm clones it,
// packs it and installs the pack, all offline.
func npmGitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agor-git-hello")
	writeFiles(t, dir, map[string]string{
		"package.json": `{"name":"agor-git-hello","version":"1.0.0","bin":{"agor-git-hello":"cli.js"}}`,
		"cli.js":       "#!/usr/bin/env node\nconsole.log('git-hello-ran')\n",
	})
	gitOut(t, dir, "init", "-q", "-b", "main")
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "commit", "-qm", "one")
	return dir
}

// pipBackend is an in-tree build backend that needs nothing installed:
// pip builds the package (in an isolated environment, in TMPDIR) and
// installs the wheel with --no-index, so no index is asked for anything.
const pipBackend = `import base64, hashlib, os, zipfile
NAME, VERSION = "agor_hi", "1.0"
DIST = NAME + "-" + VERSION + ".dist-info/"
FILES = {
    NAME + "/__init__.py": "def main():\n    print('pip-ran')\n",
    DIST + "METADATA": "Metadata-Version: 2.1\nName: agor-hi\nVersion: " + VERSION + "\n",
    DIST + "WHEEL": "Wheel-Version: 1.0\nGenerator: agor-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    DIST + "entry_points.txt": "[console_scripts]\nagor-hi = agor_hi:main\n",
}
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = NAME + "-" + VERSION + "-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, text in FILES.items():
            data = text.encode()
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
        record.append(DIST + "RECORD,,")
        z.writestr(DIST + "RECORD", "\n".join(record) + "\n")
    return name
`

const pipProject = "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n"

// toolsScript is what the confined task runs: git (commit, branch,
// rebase, a todo-driven autosquash rebase with no editor), a venv with a
// local package pip builds, npm with a git dependency and a tarball.
const toolsScript = `umask 0
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git init -q -b main && git add main.go && git commit -qm one && echo git-ok
git checkout -qb topic && echo t > t.txt && git add t.txt && git commit -qm on-topic &&
	git checkout -q main && echo m > m.txt && git add m.txt && git commit -qm on-main &&
	git checkout -q topic && git rebase -q main && echo t2 >> t.txt && git commit -qam 'fixup! on-topic' &&
	GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash main && echo rebase-ok
python3 -m venv .venv && .venv/bin/python -m pip install -q --no-index --disable-pip-version-check ./hipkg >pip.log 2>&1 &&
	.venv/bin/agor-hi || cat pip.log
`

// npmScript installs the project's dependencies with npm at path.
func npmScript(npm string) string {
	return npm + ` install --offline --no-audit --no-fund --no-update-notifier >npm.log 2>&1 &&
	./node_modules/.bin/agor-hello && ./node_modules/.bin/agor-git-hello || cat npm.log
`
}

// shEnv is sh, but with the environment a confined task gets (Spec.Env:
// the package managers' caches in its temp directory), not the test's.
func (r viewRig) shEnv(t *testing.T, script string) string {
	t.Helper()
	spec := r.spec()
	spec.self = os.Args[0]
	argv := spec.Command([]string{"/bin/sh", "-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	env := []string{}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "XDG_CACHE_HOME" && k != "npm_config_cache" {
			env = append(env, kv)
		}
	}
	cmd.Dir, cmd.Env, cmd.WaitDelay = r.work, spec.Env(env), 5*time.Second
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == ExitLauncher {
		t.Fatalf("the launcher failed: %s", out)
	}
	return string(out)
}

// TestViewToolsWork: what agents run to set a project up still works in
// the view, with her home read-only and after umask 0 (the init answers
// what umask they read): git init, commit, branch and rebase, python3 -m
// venv (pip installing itself, chmodding its scripts) and pip building
// and installing a local package, npm installing a git dependency
// (git clone, its pack, the bin's chmod) and a tarball. Each is judged
// by what it left: commits where a rebase puts them, a console script
// and bins that run, modes no more open than 022 grants; and by the
// post-run guard, which must find nothing to disable.
func TestViewToolsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pip and npm")
	}
	needNamespaces(t)
	r := newViewRig(t)
	_ = os.RemoveAll(filepath.Join(r.work, ".git"))
	t.Setenv("HOME", r.home) // read-only in the view; the guard keeps its record there
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	writeFiles(t, filepath.Join(r.work, "hipkg"), map[string]string{"backend.py": pipBackend, "pyproject.toml": pipProject})
	script, want := toolsScript, []string{"git-ok", "rebase-ok", "pip-ran"}
	npm, npmErr := exec.LookPath("npm")
	if npmErr == nil {
		writeFiles(t, r.work, map[string]string{"package.json": `{"name":"proj","version":"1.0.0","dependencies":{` +
			`"agor-git-hello":"git+file://` + npmGitRepo(t) + `#main","agor-hello":"file:` + npmTarball(t) + `"}}`})
		script += npmScript(npm)
		want = append(want, "hello-ran", "git-hello-ran")
	}
	guard := gitguard.SnapshotView(r.work, Protected)
	out := r.shEnv(t, script)
	lines := strings.Split(out, "\n")
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %q: %s", w, out)
		}
	}
	checkRebased(t, r.work)
	checkGuard(t, guard, r.work)
	checkNoneOpen(t, r.work)
	if npmErr != nil {
		t.Skipf("npm install not tried: %v", npmErr)
	}
}

// checkRebased: topic's one commit (its fixup squashed in) sits on main's.
func checkRebased(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return // git init failed: said already
	}
	if base, tip := gitOut(t, dir, "rev-parse", "topic^"), gitOut(t, dir, "rev-parse", "main"); base != tip {
		t.Errorf("topic's parent is %s, not main's %s", base, tip)
	}
	if got := gitOut(t, dir, "log", "--format=%s", "main..topic"); got != "on-topic" {
		t.Errorf("main..topic: %q, want the one squashed commit", got)
	}
	if got := gitOut(t, dir, "show", "topic:t.txt"); got != "t\nt2" {
		t.Errorf("topic's t.txt: %q", got)
	}
}

// checkGuard: the guard finds nothing to disable in what the tools left.
func checkGuard(t *testing.T, guard *gitguard.Guard, dir string) {
	t.Helper()
	got, err := guard.Restore()
	if err != nil || len(got) > 0 {
		t.Errorf("the guard disabled what the tools made: %v\n%s", err, strings.Join(got, "\n"))
	}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), gitguard.Disabled) {
			t.Errorf("disabled: %s", p)
		}
		return nil
	})
}

// checkNoneOpen: nothing the tools made is more open than umask 022 grants.
func checkNoneOpen(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink == 0 && fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s: %v", p, fi.Mode())
		}
		return nil
	})
}
