package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func TestPrintExecutors(t *testing.T) {
	ns, mem, tasks := uint64(12_345_000_000), uint64(3<<29), uint64(7)
	list := apiwire.ExecutorList{Executors: []apiwire.ExecutorInfo{
		{User: "alice", Socket: "active", Service: "active", Connected: true, Usage: &apiwire.ExecutorUsage{
			CPUNSec: &ns, Tasks: &tasks, Unavailable: []string{"memory: none here", "io_read: off"}}},
		{User: "bob", Socket: "active", Service: "active", Usage: &apiwire.ExecutorUsage{CPUNSec: &ns, MemoryBytes: &mem, Tasks: &tasks}},
		{User: "carol", Socket: "active", Service: "inactive"},
	}}
	var out, errOut bytes.Buffer
	printExecutors(&app{stdout: &out, stderr: &errOut}, list)
	want := `USER   SOCKET  SERVICE   CONNECTED  CPU     MEM   TASKS
alice  active  active    true       12.35s  -     7
bob    active  active    false      12.35s  1.5G  7
carol  active  inactive  false      -       -     -
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := errOut.String(); got != "note: memory: none here\n" || strings.Contains(got, "io_read") {
		t.Errorf("notes = %q, want the memory note once and nothing about IO (not a column)", got)
	}
}

// The slurm backend's executors show their job, node and Slurm state.
func TestPrintExecutorJobs(t *testing.T) {
	list := apiwire.ExecutorList{Executors: []apiwire.ExecutorInfo{
		{User: "alice", Socket: "dial-back", Service: "active", Connected: true, JobID: "41", Node: "node1", JobState: "RUNNING",
			Usage: &apiwire.ExecutorUsage{Source: "slurm", Unavailable: []string{"cpu: counted by Slurm"}}},
		{User: "bob", Socket: "dial-back", Service: "activating", JobID: "42", JobState: "PENDING"},
	}}
	var out, errOut bytes.Buffer
	printExecutors(&app{stdout: &out, stderr: &errOut}, list)
	want := `USER   SOCKET     SERVICE     CONNECTED  CPU  MEM  TASKS  JOB  NODE   STATE
alice  dial-back  active      true       -    -    -      41   node1  RUNNING
bob    dial-back  activating  false      -    -    -      42   -      PENDING
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	if errOut.String() != "note: cpu: counted by Slurm\n" {
		t.Errorf("notes = %q", errOut.String())
	}
}

// Each person's network mode and what went through the egress service,
// up/down.
func TestPrintExecutorNetwork(t *testing.T) {
	list := apiwire.ExecutorList{Executors: []apiwire.ExecutorInfo{
		{User: "alice", Socket: "active", Service: "active", Connected: true,
			Network: &apiwire.ExecutorNetwork{Mode: "proxy", BytesUp: 1536, BytesDown: 3 << 20, Allowed: 4, Denied: 1}},
		{User: "bob", Socket: "active", Service: "inactive", Network: &apiwire.ExecutorNetwork{Mode: "open"}},
	}}
	var out, errOut bytes.Buffer
	printExecutors(&app{stdout: &out, stderr: &errOut}, list)
	want := `USER   SOCKET  SERVICE   CONNECTED  CPU  MEM  TASKS  NET    EGRESS
alice  active  active    true       -    -    -      proxy  1.5K/3.0M
bob    active  inactive  false      -    -    -      open   -
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}
