package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// workspace makes a tree of files files, ten a directory, twenty
// directories a directory (a project's shape more than many() is), with
// a repository, and a settings file every hundred directories.
func workspace(b *testing.B, root string, files int) (dirs int) {
	b.Helper()
	src := filepath.Join(root, ".src")
	var err error
	for i := 0; i < files && err == nil; i++ {
		if i%10 == 0 {
			dirs++
			if err = os.MkdirAll(benchDir(root, dirs), 0o755); err == nil && dirs%100 == 0 {
				err = os.WriteFile(filepath.Join(benchDir(root, dirs), ".eslintrc.json"), []byte("{}"), 0o644)
			}
		}
		if i%60_000 == 0 && err == nil {
			src = filepath.Join(root, fmt.Sprintf(".src%d", i))
			err = os.WriteFile(src, nil, 0o644)
		}
		if err == nil {
			err = os.Link(src, filepath.Join(benchDir(root, dirs), fmt.Sprintf("f%d.go", i)))
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "vendor/lib/.git/objects"), 0o755); err != nil {
		b.Fatal(err)
	}
	return dirs
}

// benchDir is the d-th directory: a/b/c, twenty a level.
func benchDir(root string, d int) string {
	return filepath.Join(root, fmt.Sprintf("p%d", d/400), fmt.Sprintf("m%d", d/20%20), fmt.Sprintf("d%d", d%20))
}

// change makes n changes in a workspace of dirs directories for round r:
// files written in place across the tree, and as many new files in new
// directories, with a plant among them. It returns what to remove after.
func change(b *testing.B, root string, dirs, n, r int) string {
	b.Helper()
	for i := range n / 2 {
		d := 1 + (i*7919)%dirs
		if err := os.WriteFile(filepath.Join(benchDir(root, d), fmt.Sprintf("new%d-%d.go", r, i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	fresh := filepath.Join(root, fmt.Sprintf("round%d", r))
	for i := range n - n/2 {
		dir := filepath.Join(fresh, fmt.Sprintf("pkg%d", i/10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(fresh, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh, ".git/config"), []byte("[core]\n\tfsmonitor = x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return fresh
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkGuard prints what the guard costs in a workspace of 200,000
// files (2,000 with -short): its snapshot's walk, and its sweep when a
// task ends having changed a few files and having changed many (half
// written in place across the tree, half new in new directories), the
// median of rounds. The sweep stats each directory and lists those that
// changed: it grows with the directories and with what changed.
func BenchmarkGuard(b *testing.B) {
	files, rounds := 200_000, 5
	if testing.Short() {
		files, rounds = 2_000, 1
	}
	root := b.TempDir()
	dirs := workspace(b, root, files)
	for b.Loop() {
		for _, n := range []int{10, files / 10} {
			var snap, sweep []time.Duration
			for r := range rounds {
				t0 := time.Now()
				g := SnapshotView(root, nil)
				snap = append(snap, time.Since(t0))
				time.Sleep(60 * time.Millisecond) // the task's changes after the scan's margin
				fresh := change(b, root, dirs, n, r)
				t0 = time.Now()
				if _, err := g.Restore(); err != nil {
					b.Fatal(err)
				}
				sweep = append(sweep, time.Since(t0))
				if err := os.RemoveAll(fresh); err != nil {
					b.Fatal(err)
				}
				_ = os.RemoveAll(fresh + Disabled)
			}
			b.Logf("%d files in %d directories, %d changed: snapshot median %v, sweep median %v (of %d rounds)",
				files, dirs, n, median(snap).Round(time.Millisecond), median(sweep).Round(time.Millisecond), rounds)
			b.ReportMetric(float64(median(sweep).Microseconds()), fmt.Sprintf("sweep-%d-changed-us", n))
		}
	}
}
