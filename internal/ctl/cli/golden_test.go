package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
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
		{"agent", "--help"},
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

// TestRendersWireStream: agorctl prompt renders the wire's golden stream
// (internal/wire/apiwire/testdata/prompt_stream.json), the file the
// page's render test reads too: the two cannot drift apart unseen.
func TestRendersWireStream(t *testing.T) {
	raw, err := os.ReadFile("../../wire/apiwire/testdata/prompt_stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var lines []apiwire.PromptLine
	if err := json.Unmarshal(raw, &lines); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	// No daemon: the question's pending id is not found, as after it was answered.
	r := &renderer{out: &out, errw: &errw, c: apiclient.New(filepath.Join(t.TempDir(), "none.sock")), start: time.Now()}
	for i, l := range lines {
		done, err := r.line(context.Background(), l)
		if done != (i == len(lines)-1) || err != nil {
			t.Fatalf("line %d: done %v, %v", i, done, err)
		}
	}
	for _, want := range []string{"I'll run it.", "Bash", "id -un > whoami.txt", "alice", "Done.", "completed · 2 messages · tokens in 12 out 7"} {
		if !strings.Contains(out.String()+errw.String(), want) {
			t.Errorf("agorctl's rendering has no %q:\n%s%s", want, out.String(), errw.String())
		}
	}
}
