package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkLauncher prints what the launcher adds to starting a program:
// /bin/true run directly, through the launcher under workspace with
// Landlock and seccomp only (as before the view), and with the namespace
// view (the launcher is this test binary, as the executor is), median of
// 50 each.
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
	view := spec
	view.Namespaces, view.Temp = true, spec.Writable[0]
	if err := NamespacesWork(os.Args[0]); err != nil {
		b.Logf("no namespaces here (%v): the view is not measured", err)
		view.Namespaces = false
	}
	for b.Loop() {
		plain := runs([]string{"/bin/true"})
		boxed := runs(spec.Command([]string{"/bin/true"}))
		viewed := runs(view.Command([]string{"/bin/true"}))
		b.Logf("start /bin/true, median of 50: directly %v; Landlock and seccomp only %v (adds %v); with the namespace view %v (adds %v to the launcher, %v to /bin/true)",
			plain, boxed, boxed-plain, viewed, viewed-boxed, viewed-plain)
		b.ReportMetric(float64(plain.Microseconds()), "direct-us")
		b.ReportMetric(float64(boxed.Microseconds()), "launcher-us")
		b.ReportMetric(float64(viewed.Microseconds()), "view-us")
	}
}
