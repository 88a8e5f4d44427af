package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what agorctl renders now (go test -run %s -update rewrites it); got:\n%s", path, t.Name(), got)
	}
}

// A few rendered helps, as a person reads them.
func TestGoldenHelp(t *testing.T) {
	t.Setenv("AGOR_SOCKET", "") // the --api default shown is the built-in one
	for _, args := range [][]string{
		{"--help"},
		{"executors", "--help"},
		{"executors", "ping", "--help"},
		{"prompt", "--help"},
		{"creds", "set", "--help"},
	} {
		r := agorctl(context.Background(), closedStdin{t}, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		name := strings.Join(append([]string{"agorctl"}, args[:len(args)-1]...), "-")
		golden(t, filepath.Join("help", name+".txt"), []byte(r.stdout))
	}
}

// The man page made from the command definitions (make man).
func TestGoldenMan(t *testing.T) {
	t.Setenv("AGOR_SOCKET", "")
	var b bytes.Buffer
	if err := writeMan(&b, newRoot(&app{}), "0.1.0", "2026-11-23"); err != nil {
		t.Fatal(err)
	}
	golden(t, "agorctl.1", b.Bytes())
	for _, want := range []string{".SS \"agorctl executors ping", "\\fB\\-\\-no\\-daemon\\fR", ".SH EXIT STATUS", "124"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "agorctl executor ping") {
		t.Errorf("man page shows the hidden old spelling")
	}
}
