package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkLauncher prints what the launcher adds to starting a program:
// /bin/true run directly and through the launcher under workspace (the
// launcher is this test binary, as the executor is), median of 50 each.
func BenchmarkLauncher(b *testing.B) {
	if ABI() == 0 {
		b.Skip("this kernel has no Landlock")
	}
	dir := b.TempDir()
	spec := Spec{Level: Workspace, Cwd: dir, Writable: []string{b.TempDir()}, self: os.Args[0]}
	runs := func(argv []string) time.Duration {
		var ds []time.Duration
		for range 50 {
			t := time.Now()
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	for b.Loop() {
		plain := runs([]string{"/bin/true"})
		boxed := runs(spec.Command([]string{"/bin/true"}))
		b.Logf("start /bin/true, median of 50: directly %v, through the sandbox launcher %v (adds %v)", plain, boxed, boxed-plain)
		b.ReportMetric(float64(plain.Microseconds()), "direct-us")
		b.ReportMetric(float64(boxed.Microseconds()), "launcher-us")
	}
}
