package audit

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRotation: past MaxBytes the file moves aside and a new one starts,
// no record lost; rotated files past MaxAge go at the next prune.
func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(Options{Path: path, MaxBytes: 4096, MaxAge: time.Hour, Log: slog.New(slog.DiscardHandler), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	l.mu.Lock()
	l.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	l.mu.Unlock()
	for range 200 {
		l.Log(Record{Action: "credential_set", User: "alice", Credential: "ANTHROPIC_API_KEY"})
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	rotated, _ := filepath.Glob(path + ".*")
	if len(rotated) < 2 {
		t.Fatalf("rotated files %v, want several", rotated)
	}
	lines := 0
	for _, p := range append(rotated, path) {
		if fi, _ := os.Stat(p); fi.Size() > 4096+512 {
			t.Errorf("%s is %d bytes", p, fi.Size())
		}
		f, _ := os.Open(p)
		for sc := bufio.NewScanner(f); sc.Scan(); {
			lines++
		}
		f.Close()
	}
	if lines != 200 {
		t.Fatalf("%d records across the files, want 200", lines)
	}
	l.mu.Lock()
	l.now = func() time.Time { return clock.Add(2 * time.Hour) }
	l.mu.Unlock()
	l.Prune()
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Fatalf("rotated files past the age left: %v", left)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
