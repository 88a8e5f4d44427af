package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

type env struct {
	root string
	c    *rpc.Conn
	svc  *Service
}

func setup(t testing.TB) *env {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "home")
	must(t, os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "outside.txt"), []byte("secret"), 0o644))
	must(t, os.Symlink("/etc", filepath.Join(root, "etc-link")))
	must(t, os.Symlink("..", filepath.Join(root, "up")))
	r, err := fsroot.Open(root)
	must(t, err)
	svc := New(r)
	mux := rpc.NewMux()
	svc.Register(mux)
	t.Cleanup(func() { svc.Close(); r.Close() }) // after the pair's end
	_, client := rpctest.Pair(t, mux, nil, rpc.Options{}, rpc.Options{})
	return &env{root: root, c: client, svc: svc}
}

func (e *env) call(method string, params, result any) error {
	return e.c.Call(context.Background(), method, params, result)
}

func code(err error) int {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestWriteReadRoundTripAndModes(t *testing.T) {
	e := setup(t)
	var w protocol.WriteFileResult
	must(t, e.call("write_file", map[string]any{"path": "src/a.txt", "content": []byte("hello")}, &w))
	if !w.Committed || w.Size != 5 {
		t.Fatalf("write = %+v", w)
	}
	var r protocol.ReadFileResult
	must(t, e.call("read_file", map[string]any{"path": "src/a.txt"}, &r))
	if string(r.Content) != "hello" || !r.EOF || r.Mode != 0o644 {
		t.Fatalf("read = %+v", r)
	}
	must(t, os.Chmod(filepath.Join(e.root, "src/a.txt"), 0o600))
	must(t, e.call("write_file", map[string]any{"path": "src/a.txt", "content": []byte("again")}, &w))
	if fi, _ := os.Stat(filepath.Join(e.root, "src/a.txt")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("overwrite changed mode to %v, want it kept at 0600", fi.Mode().Perm())
	}
	must(t, e.call("write_file", map[string]any{"path": "run.sh", "content": []byte("#!/bin/sh\n"), "mode": 0o755}, &w))
	if fi, _ := os.Stat(filepath.Join(e.root, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("given mode not applied: %v", fi.Mode().Perm())
	}
	leftovers, _ := filepath.Glob(filepath.Join(e.root, "src", ".*agor-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestChunkedWriteAndRead(t *testing.T) {
	e := setup(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB
	for off := 0; off < len(data); off += DefaultChunk {
		end := min(off+DefaultChunk, len(data))
		final := end == len(data)
		var w protocol.WriteFileResult
		must(t, e.call("write_file", map[string]any{"path": "big.bin", "content": data[off:end], "offset": off, "final": final}, &w))
		if w.Committed != final {
			t.Fatalf("chunk at %d: committed=%v", off, w.Committed)
		}
		if !final {
			if _, err := os.Stat(filepath.Join(e.root, "big.bin")); err == nil {
				t.Fatal("target visible before the final chunk")
			}
		}
	}
	var got []byte
	for off := int64(0); ; {
		var r protocol.ReadFileResult
		must(t, e.call("read_file", map[string]any{"path": "big.bin", "offset": off, "length": 1 << 30}, &r))
		got = append(got, r.Content...)
		off += int64(len(r.Content))
		if r.EOF {
			break
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, differing from the %d written", len(got), len(data))
	}
	err := e.call("write_file", map[string]any{"path": "x", "content": []byte("a"), "offset": 7, "final": false}, nil)
	if code(err) != rpc.CodeInvalidParams {
		t.Fatalf("write at an offset with no write begun: %v", err)
	}
	err = e.call("write_file", map[string]any{"path": "x", "content": make([]byte, DefaultChunk+1)}, nil)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeLimitReached || re.Data["limit"] == nil {
		t.Fatalf("oversized chunk: %v", err)
	}
}

func TestEscapesRefused(t *testing.T) {
	e := setup(t)
	for _, p := range []string{"../outside.txt", "up/outside.txt", "/etc/passwd", "etc-link/passwd", filepath.Join(e.root, "../outside.txt")} {
		if err := e.call("read_file", map[string]any{"path": p}, nil); code(err) != protocol.CodePermissionDenied {
			t.Errorf("read_file %q: %v, want permission denied", p, err)
		}
		if err := e.call("write_file", map[string]any{"path": p, "content": []byte("x")}, nil); code(err) != protocol.CodePermissionDenied {
			t.Errorf("write_file %q: %v, want permission denied", p, err)
		}
	}
	for _, p := range []string{"..", "etc-link", "/"} {
		if err := e.call("list_files", map[string]any{"path": p}, nil); code(err) != protocol.CodePermissionDenied {
			t.Errorf("list_files %q: %v, want permission denied", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(e.root), "outside.txt")); string(b) != "secret" {
		t.Fatal("the outside file was changed")
	}
	if err := e.call("read_file", map[string]any{"path": "nope.txt"}, nil); code(err) != protocol.CodeNotFound {
		t.Errorf("missing file: %v, want not found", err)
	}
}

// A reader never sees a write half done.
func TestAtomicWriteSeenWhole(t *testing.T) {
	e := setup(t)
	a, b := bytes.Repeat([]byte("A"), 256<<10), bytes.Repeat([]byte("B"), 256<<10)
	must(t, e.call("write_file", map[string]any{"path": "f", "content": a}, nil))
	var stop atomic.Bool
	var torn, reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(filepath.Join(e.root, "f"))
			if err != nil {
				continue
			}
			reads.Add(1)
			if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
				torn.Add(1)
			}
		}
	}()
	for i := range 60 {
		content := a
		if i%2 == 1 {
			content = b
		}
		must(t, e.call("write_file", map[string]any{"path": "f", "content": content}, nil))
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() > 0 {
		t.Fatalf("%d of %d reads saw a partial file", torn.Load(), reads.Load())
	}
}

func TestWriteFilesAndList(t *testing.T) {
	e := setup(t)
	var wm protocol.WriteFilesResult
	must(t, e.call("write_files", map[string]any{"files": []map[string]any{
		{"path": "src/pkg/one.go", "content": []byte("package pkg")},
		{"path": "../escape.go", "content": []byte("x")},
		{"path": "src/two.go", "content": []byte("package src")},
	}}, &wm))
	if wm.Written != 2 || wm.Results[1].Error == nil || wm.Results[1].Error.Code != protocol.CodePermissionDenied {
		t.Fatalf("write_files = %+v", wm)
	}
	var l protocol.ListFilesResult
	must(t, e.call("list_files", map[string]any{"path": "src", "recursive": true, "pattern": "*.go"}, &l))
	var names []string
	for _, en := range l.Entries {
		names = append(names, en.Path)
	}
	if strings.Join(names, ",") != "src/pkg/one.go,src/two.go" && strings.Join(names, ",") != "src/two.go,src/pkg/one.go" {
		t.Fatalf("list = %v", names)
	}
	must(t, e.call("list_files", map[string]any{"path": ".", "recursive": true, "max": 2}, &l))
	if len(l.Entries) != 2 || !l.Truncated {
		t.Fatalf("max 2: %d entries, truncated=%v", len(l.Entries), l.Truncated)
	}
	if err := e.call("list_files", map[string]any{"path": ".", "pattern": "["}, nil); code(err) != rpc.CodeInvalidParams {
		t.Fatalf("bad pattern: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReadWrite64MiB moves a 64 MiB file through the protocol in
// chunks, written atomically then read back, and reports MB/s for each.
func BenchmarkReadWrite64MiB(b *testing.B) {
	e := setup(b)
	data := bytes.Repeat([]byte("agor-64MiB-bench"), 64<<20/16)
	var wsec, rsec float64
	for b.Loop() {
		t0 := time.Now()
		for off := 0; off < len(data); off += DefaultChunk {
			end := min(off+DefaultChunk, len(data))
			must(b, e.call("write_file", map[string]any{"path": "big", "content": data[off:end], "offset": off, "final": end == len(data)}, nil))
		}
		t1 := time.Now()
		var n int64
		for off := int64(0); ; {
			var r protocol.ReadFileResult
			must(b, e.call("read_file", map[string]any{"path": "big", "offset": off}, &r))
			n += int64(len(r.Content))
			off += int64(len(r.Content))
			if r.EOF {
				break
			}
		}
		if n != int64(len(data)) {
			b.Fatalf("read %d bytes", n)
		}
		wsec += t1.Sub(t0).Seconds()
		rsec += time.Since(t1).Seconds()
	}
	mb := float64(len(data)) / 1e6 * float64(b.N)
	b.ReportMetric(mb/wsec, "write-MB/s")
	b.ReportMetric(mb/rsec, "read-MB/s")
}

// TestWriteOverSymlink: a symbolic link at the path is replaced by a
// regular file made 0666 less the umask (not the link's 0777), and its
// target is left alone.
func TestWriteOverSymlink(t *testing.T) {
	e := setup(t)
	target := filepath.Join(e.root, "src", "target.txt")
	must(t, os.WriteFile(target, []byte("keep"), 0o600))
	must(t, os.Symlink("target.txt", filepath.Join(e.root, "src", "link.txt")))
	var w protocol.WriteFileResult
	must(t, e.call("write_file", map[string]any{"path": "src/link.txt", "content": []byte("new")}, &w))
	fi, err := os.Lstat(filepath.Join(e.root, "src", "link.txt"))
	must(t, err)
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != os.FileMode(0o666&^umask()) {
		t.Fatalf("the link became %v, want a regular file %v", fi.Mode(), os.FileMode(0o666&^umask()))
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the link's target was written: %q", b)
	}
	old := syscall.Umask(0o077) // the process's own umask shapes new files
	defer syscall.Umask(old)
	must(t, e.call("write_file", map[string]any{"path": "src/private.txt", "content": []byte("p")}, &w))
	if fi, _ := os.Stat(filepath.Join(e.root, "src", "private.txt")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("under umask 077 a new file is %v, want 0600", fi.Mode().Perm())
	}
}
