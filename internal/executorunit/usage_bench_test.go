package executorunit

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkUsage100 is the daemon's cost of one usage read for 100 live
// executors with the direct backend: 100 process trees (a shell and its
// child each) read from /proc, as GET /v1/executors does. The systemd
// backend's figure (D-Bus, one Get after another and concurrently) needs
// systemd and 100 units: make test-systemd prints it.
func BenchmarkUsage100(b *testing.B) {
	d := &Direct{execs: map[string]*directExec{}}
	var users []string
	for i := range 100 {
		cmd := exec.Command("sh", "-c", "sleep 600 & wait")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		b.Cleanup(func() { _ = cmd.Process.Kill() })
		name := fmt.Sprintf("u%03d", i)
		d.execs[name] = &directExec{cmd: cmd, done: done}
		users = append(users, name)
	}
	time.Sleep(100 * time.Millisecond) // the children are started
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		got, err := d.Usage(context.Background(), users)
		took = append(took, time.Since(t0))
		if err != nil || len(got) != 100 || *got["u000"].Tasks < 2 {
			b.Fatalf("usage of 100: %d %v", len(got), err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/read-of-100")
	b.Logf("usage of 100 executors (direct backend, /proc): median %s of %d reads", took[len(took)/2], len(took))
}
