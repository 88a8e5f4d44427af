package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// The live network section counts the drop-ins: one added is read at the
// next Get, one that does not parse leaves the last good section in
// force, and removing it is a change too.
func TestNetworkSourceReadsDropIns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	put := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(path, "network:\n  users:\n    alice: {mode: open}\n")
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	n := newNetworkSource(path, c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	mode := func() string { return n.Get().Users["alice"].Mode }
	if got := mode(); got != "open" {
		t.Fatalf("alice's mode %q at start, want open", got)
	}
	if err := os.Mkdir(config.DropInDir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	drop := filepath.Join(config.DropInDir(path), "50-net.yaml")
	put(drop, "network:\n  users:\n    alice: {mode: proxy}\n")
	if got := mode(); got != "proxy" {
		t.Fatalf("alice's mode %q after a drop-in said proxy", got)
	}
	put(drop, "network:\n  users:\n    alice: {mode: none}\n  bogus: 1\n")
	if got := mode(); got != "proxy" {
		t.Fatalf("alice's mode %q after the drop-in stopped parsing, want the last good (proxy)", got)
	}
	if err := os.Remove(drop); err != nil {
		t.Fatal(err)
	}
	if got := mode(); got != "open" {
		t.Fatalf("alice's mode %q after the drop-in went, want open", got)
	}
}
