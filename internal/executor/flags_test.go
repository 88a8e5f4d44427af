package executor

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("AGOR_EXECUTOR_ROOT", "") // restored after the test
	os.Unsetenv("AGOR_EXECUTOR_ROOT")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   string
		rootSeen bool
	}{
		{name: "help", args: []string{"--help"}, code: ExitOK,
			stdout: []string{"--idle-timeout", "default: 1m0s", "AGOR_EXECUTOR_IDLE_TIMEOUT", "EXIT STATUS", "--daemon-user"}},
		{name: "version", args: []string{"--version"}, code: ExitOK, stdout: []string{"agor-executor "}},
		{name: "argument", args: []string{"extra"}, code: ExitUsage, stderr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--nope"}, code: ExitUsage, stderr: "nope"},
		{name: "serve", args: []string{"--listen", "/tmp/x.sock"}, code: -1},
		{name: "root", args: []string{"--root", "/srv"}, code: -1, rootSeen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			o, code := ParseFlags(tc.args, &out, &errb)
			if code != tc.code || (o == nil) != (tc.code != -1) {
				t.Fatalf("code %d, options %v; want %d\nstderr: %s", code, o, tc.code, errb.String())
			}
			for _, want := range tc.stdout {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q", want)
				}
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.stderr)
			}
			if o != nil && o.RootGiven != tc.rootSeen {
				t.Errorf("RootGiven = %v", o.RootGiven)
			}
		})
	}
}

func TestDialListenerNeeds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     Options
		stdin string
		want  string
	}{
		{"no CA", Options{Dial: "h:1", JobID: "7"}, "tok\n", "--dial needs --dial-ca"},
		{"no job", Options{Dial: "h:1", DialCA: "ca.pem"}, "tok\n", "--dial needs --job-id"},
		{"bad CA", Options{Dial: "h:1", DialCA: "/nonexistent/ca.pem", JobID: "7"}, "tok\n", "--dial-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialListener(&tc.o, strings.NewReader(tc.stdin))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
