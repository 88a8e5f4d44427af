package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary is its own launcher, as the executor is, and the
// probe a confined process runs (probeEnv).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == LauncherArg {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
	if p := os.Getenv(probeEnv); p != "" {
		os.Exit(probe(p))
	}
	os.Exit(m.Run())
}

func needLandlock(t *testing.T) {
	if ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
}

// run runs sh -c script under spec through the launcher.
func run(t *testing.T, spec Spec, dir, script string) (string, error) {
	t.Helper()
	spec.self = os.Args[0]
	argv := spec.Command([]string{"/bin/sh", "-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second // a child left behind holding the output
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestWorkspace(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	work := filepath.Join(home, "proj")
	state := filepath.Join(home, ".agent")
	for _, d := range []string{work, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Level: Workspace, Cwd: work, Writable: []string{state}}
	out, err := run(t, spec, work, "echo in > inside.txt && echo s > "+state+"/s && cat /etc/hostname >/dev/null && echo ok")
	if err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("writes inside the workspace and state, reads elsewhere: %v %s", err, out)
	}
	for _, target := range []string{filepath.Join(home, "outside.txt"), filepath.Join(home, ".bashrc")} {
		out, err = run(t, spec, work, "echo x > "+target)
		if err == nil || !strings.Contains(out, "Permission denied") {
			t.Errorf("write to %s: %v %s, want EACCES", target, err, out)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s was written", target)
		}
	}
	// Off: the same writes succeed.
	if out, err := run(t, Spec{Level: Off}, work, "echo x > "+filepath.Join(home, "outside.txt")); err != nil {
		t.Fatalf("off: %v %s", err, out)
	}
}

func TestReadOnly(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	tmp := filepath.Join(home, "tmp")
	_ = os.Mkdir(tmp, 0o755)
	spec := Spec{Level: ReadOnly, Cwd: home, Writable: []string{tmp}}
	if out, err := run(t, spec, home, "echo x > here.txt"); err == nil {
		t.Fatalf("read-only wrote its cwd: %s", out)
	}
	if out, err := run(t, spec, home, "echo x > tmp/t && cat tmp/t"); err != nil {
		t.Fatalf("read-only may write its temp: %v %s", err, out)
	}
}

func TestCommandOff(t *testing.T) {
	argv := []string{"ls", "-l"}
	if got := (Spec{Level: Off, self: "/x"}).Command(argv); len(got) != 2 {
		t.Fatalf("off wraps: %v", got)
	}
	got := Spec{Level: Workspace, Cwd: "/w", Writable: []string{"/s"}, self: "/x"}.Command(argv)
	want := "/x __agor-sandbox --rw /w --rw /s -- ls -l"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestLauncherBadArgs(t *testing.T) {
	for _, args := range [][]string{{}, {"--rw"}, {"--rw", "/x"}, {"--"}, {"-x", "--", "true"}} {
		cmd := exec.Command(os.Args[0], append([]string{LauncherArg}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitLauncher || !strings.Contains(string(out), "agor sandbox:") {
			t.Errorf("%q: %v %s", args, err, out)
		}
	}
}

func TestForcedABI(t *testing.T) {
	t.Setenv(ForceABIEnv, "0")
	if ABI() != 0 {
		t.Fatal("not forced")
	}
}

// TestHomeWorkspace: a workspace is a project, never the home directory
// or above it (the README's own example wrote ~/.bashrc and
// ~/.ssh/authorized_keys with the default --cwd).
func TestHomeWorkspace(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	p := Policy{Self: os.Args[0]}
	for cwd, refused := range map[string]bool{home: true, filepath.Dir(home): true, "/": true, link: true, proj: false} {
		_, _, err := p.Prepare(Workspace, cwd, home, nil)
		if got := errors.Is(err, ErrWorkspaceHome); got != refused || (!refused && err != nil && ABI() > 0) {
			t.Errorf("workspace at %s: %v, want refused=%v", cwd, err, refused)
		}
		if _, _, err := p.Prepare(ReadOnly, cwd, home, nil); errors.Is(err, ErrWorkspaceHome) {
			t.Errorf("read-only at %s refused: %v", cwd, err)
		}
	}
}

// TestSpecEnvCaches: a confined process gets TMPDIR and the caches in its
// private temp, unless it names its caches already (an agent's state).
func TestSpecEnvCaches(t *testing.T) {
	s := Spec{Level: Workspace, Cwd: "/w", Temp: "/t"}
	got := strings.Join(s.Env([]string{"HOME=/h"}), " ")
	if want := "HOME=/h TMPDIR=/t XDG_CACHE_HOME=/t/cache npm_config_cache=/t/npm"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got = strings.Join(s.Env([]string{"npm_config_cache=/state/npm"}), " ")
	if want := "npm_config_cache=/state/npm TMPDIR=/t XDG_CACHE_HOME=/t/cache"; got != want {
		t.Errorf("an agent's own cache: got %q, want %q", got, want)
	}
	if got := (Spec{Level: Off}).Env([]string{"A=1"}); len(got) != 1 {
		t.Errorf("unconfined: %q", got)
	}
}
