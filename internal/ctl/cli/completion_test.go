package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// script writes agorctl's completion script for shell to a file.
func script(t *testing.T, shell string) string {
	t.Helper()
	r := agorctl(context.Background(), closedStdin{t}, "completion", shell)
	if r.code != 0 || len(r.stdout) < 500 {
		t.Fatalf("completion %s: exit %d, %d bytes: %s", shell, r.code, len(r.stdout), r.stderr)
	}
	path := filepath.Join(t.TempDir(), "agorctl."+shell)
	if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func needShell(t *testing.T, shell string) string {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("%s is not installed (test/deps.sh installs it): %v", shell, err)
	}
	return path
}

// The scripts parse in the real shells (bash -n, zsh -n, fish -n).
func TestCompletionScriptsParse(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			sh := needShell(t, shell)
			path := script(t, shell)
			if out, err := exec.Command(sh, "-n", path).CombinedOutput(); err != nil {
				t.Fatalf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

// agorctlOnPath puts an "agorctl" that is this test binary acting as
// agorctl first on PATH, for the shells' completion functions to call.
func agorctlOnPath(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	wrapper := "#!/bin/sh\nAGORCTL_RUN_MAIN=1 exec " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "agorctl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

// A real completion round in bash and fish: commands, subcommands, a
// flag's values, and user names from the (fake) daemon.
func TestCompletionRound(t *testing.T) {
	d := newFakeDaemon(t)
	t.Setenv("AGOR_SOCKET", d.socket)
	agorctlOnPath(t)
	t.Run("bash", func(t *testing.T) {
		sh := needShell(t, "bash")
		const lib = "/usr/share/bash-completion/bash_completion"
		if _, err := os.Stat(lib); err != nil {
			t.Skipf("bash-completion is not installed (test/deps.sh installs it): %v", err)
		}
		path := script(t, "bash")
		probe := `source ` + lib + `; source "$1"; compopt() { :; }; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE};` +
			` __start_agorctl agorctl; printf '%s\n' "${COMPREPLY[@]}"`
		for _, tc := range []struct {
			words []string
			want  string
		}{
			{[]string{"agorctl", "prom"}, "prompt"},
			{[]string{"agorctl", "executors", "en"}, "ensure"},
			{[]string{"agorctl", "prompt", "--tool", "co"}, "codex"},
			{[]string{"agorctl", "executors", "start", "al"}, "alice"},
			{[]string{"agorctl", "tasks", "list", ""}, "s1"},
		} {
			out, err := exec.Command(sh, append([]string{"-c", probe, "bash", path}, tc.words...)...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != tc.want {
				t.Errorf("%q: completions %q (%v), want %q", tc.words, out, err, tc.want)
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		sh := needShell(t, "fish")
		path := script(t, "fish")
		out, err := exec.Command(sh, "--no-config", "-c", "source $argv[1]; complete -C 'agorctl executors start '", path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "alice") || !strings.Contains(string(out), "bob") {
			t.Errorf("fish: %q (%v)", out, err)
		}
	})
}

// Dynamic completion asks the daemon; without one it offers nothing and
// says nothing.
func TestCompletionDynamic(t *testing.T) {
	d := newFakeDaemon(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "executors", "start", "--api", d.socket, ""}, "alice\nbob\n"},
		{[]string{"__complete", "tasks", "--api", d.socket, ""}, "s1\talice codex .\n"},
		{[]string{"__complete", "events", "--api", d.socket, ""}, "t1\tcompleted hello\n"},
		{[]string{"__complete", "tasks", "stop", "--api", d.socket, ""}, "t1\tcompleted hello\n"},
		{[]string{"__complete", "executors", "start", "--api", d.socket, "alice", ""}, "alice\nbob\n"},
		{[]string{"__complete", "exec", "--api", d.socket, ""}, "alice\nbob\n"},
		{[]string{"__complete", "exec", "--api", d.socket, "alice", ""}, ":4\n"},
		{[]string{"__complete", "prompt", "--api", d.socket, "--tool", ""}, "claude-code\ncodex\ngemini\nopencode\n"},
		{[]string{"__complete", "executors", "start", "--api", "/nonexistent.sock", ""}, ":4\n"},
		{[]string{"__complete", "events", "--api", "/nonexistent.sock", ""}, ":4\n"},
	} {
		r := agorctl(context.Background(), closedStdin{t}, tc.args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q (%s)", tc.args, r.code, r.stdout, tc.want, r.stderr)
		}
	}
}
