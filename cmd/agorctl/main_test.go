package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/executor"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/unixsock"
)

func TestExecutorPing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.sock")
	ln, err := unixsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := executor.NewServer(executor.Config{Policy: peer.Policy{UID: uint32(os.Getuid())}})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	defer func() { srv.Stop("test"); <-done }()

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"executor", "ping", "--socket", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res protocol.PingResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.Pong || res.UID != os.Getuid() {
		t.Fatalf("output %q: %v", out.String(), err)
	}
}

func TestExecutorPingErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"executor", "ping"}, 2, "--socket is required"},
		{[]string{"executor", "ping", "--socket", "/nonexistent/x.sock"}, 1, "connect to /nonexistent/x.sock"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		mode string
		rest []string
	}{
		{[]string{"alice", "do it", "--mode", "plan"}, "plan", []string{"alice", "do it"}},
		{[]string{"--mode", "plan", "alice", "do", "it"}, "plan", []string{"alice", "do", "it"}},
		{[]string{"alice", "--", "ls", "-l", "--mode", "x"}, "", []string{"alice", "ls", "-l", "--mode", "x"}},
		{[]string{"--mode", "plan", "--", "-not-a-flag"}, "plan", []string{"-not-a-flag"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		mode := fs.String("mode", "", "")
		rest, err := parseInterspersed(fs, tc.args)
		if err != nil || *mode != tc.mode || !slices.Equal(rest, tc.rest) {
			t.Errorf("%q: mode %q rest %q err %v; want %q %q", tc.args, *mode, rest, err, tc.mode, tc.rest)
		}
	}
}

// The completion script is valid bash and completes commands and options.
func TestCompletionBash(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"completion", "bash"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	script := filepath.Join(t.TempDir(), "agorctl.bash")
	if err := os.WriteFile(script, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := `source "$1"; COMP_WORDS=(agorctl pro); COMP_CWORD=1; _agorctl; echo "${COMPREPLY[*]}";` +
		` COMP_WORDS=(agorctl events --f); COMP_CWORD=2; _agorctl; echo "${COMPREPLY[*]}"`
	got, err := exec.Command("bash", "-c", probe, "bash", script).CombinedOutput()
	if err != nil || string(got) != "prompt\n--follow\n" {
		t.Fatalf("completions %q: %v", got, err)
	}
	for _, cmd := range completions[""] {
		if strings.HasPrefix(cmd, "-") || cmd == "executor" || cmd == "completion" {
			continue
		}
		var o, e bytes.Buffer
		run(context.Background(), []string{cmd, "--help"}, &o, &e)
		if strings.Contains(e.String(), "unknown command") {
			t.Errorf("completion offers %q, which agorctl does not know", cmd)
		}
	}
}
