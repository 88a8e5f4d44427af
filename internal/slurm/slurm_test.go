package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

func TestParseSubmitted(t *testing.T) {
	for out, want := range map[string]string{"4242\n": "4242", "17;agortest\n": "17"} {
		if got, err := ParseSubmitted(out); err != nil || got != want {
			t.Errorf("%q: %q %v", out, got, err)
		}
	}
	for _, bad := range []string{"", "Submitted batch job 12", "12a"} {
		if _, err := ParseSubmitted(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseQueue(t *testing.T) {
	jobs, err := ParseQueue("12|alice|RUNNING|node1|None\n13|bob|PENDING||Resources\n14|alice|COMPLETED|node2|None\n")
	if err != nil || len(jobs) != 3 {
		t.Fatalf("%v %v", jobs, err)
	}
	if jobs[0] != (Job{ID: "12", User: "alice", State: "RUNNING", Node: "node1", Reason: "None"}) || jobs[0].Ended() || jobs[1].Ended() || !jobs[2].Ended() {
		t.Errorf("%+v", jobs)
	}
	if _, err := ParseQueue("12|alice|RUNNING\n"); err == nil {
		t.Error("a short line accepted")
	}
	if jobs, err := ParseQueue("\n"); err != nil || len(jobs) != 0 {
		t.Errorf("empty queue: %v %v", jobs, err)
	}
}

// fakeBin writes a script that records its arguments and stdin and says
// what a Slurm command would (the real commands run in make test-slurm).
func fakeBin(t *testing.T, out string, status int) (bin, record string) {
	dir := t.TempDir()
	record = filepath.Join(dir, "record")
	bin = filepath.Join(dir, "cmd")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" >" + record + "\ncat >>" + record + "\nprintf '" + out + "'\nexit " + string(rune('0'+status)) + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, record
}

func TestSubmitArgv(t *testing.T) {
	bin, record := fakeBin(t, "99\\n", 0)
	id, err := Commands{Sbatch: bin}.Submit(context.Background(), protocol.SubmitJobParams{
		Script: "#!/bin/sh\nexec true\n", JobName: "agor-executor", Partition: "main", TimeLimit: "1:00:00", CPUs: 2, Signal: "B:USR1@60"})
	if err != nil || id != "99" {
		t.Fatalf("%q %v", id, err)
	}
	got, _ := os.ReadFile(record)
	for _, want := range []string{"--parsable", "--job-name=agor-executor", "--partition=main", "--time=1:00:00", "--cpus-per-task=2", "--signal=B:USR1@60", "--output=/dev/null", "#!/bin/sh\nexec true"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("sbatch got %q, missing %q", got, want)
		}
	}
}

func TestFailureSaysWhy(t *testing.T) {
	bin, _ := fakeBin(t, "", 1)
	os.WriteFile(bin, []byte("#!/bin/sh\necho 'scancel: error: Kill job error on job id 5: Access/permission denied' >&2\nexit 1\n"), 0o755)
	err := Commands{Scancel: bin}.Cancel(context.Background(), "5", "")
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("%v", err)
	}
}
