package executorunit

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// The direct backend counts a running executor's process tree and says
// that IO is beyond it; a user without an executor is left out.
func TestDirectUsage(t *testing.T) {
	name, _ := target(t)
	d, _ := direct(t, 0)
	ex, err := d.Ensure(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	ping(t, ex.Socket) // the executor is up and has run Go code
	got, err := d.Usage(context.Background(), []string{name, "nobody-here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["nobody-here"]; ok || len(got) != 1 {
		t.Fatalf("Usage = %v, want %s only", got, name)
	}
	u := got[name]
	if u.Source != "proc" || u.MemoryBytes == nil || *u.MemoryBytes < 1<<20 || u.Tasks == nil || *u.Tasks < 2 || u.CPUNSec == nil {
		t.Fatalf("usage of a live Go executor = %+v", u)
	}
	if u.IOReadBytes != nil || len(u.Unavailable) != 2 {
		t.Fatalf("IO should be unavailable and say so: %+v", u)
	}
}

func TestTreeUsage(t *testing.T) {
	procs := map[int]procStat{
		10: {ppid: 1, ticks: 100, threads: 5, rssPage: 10},
		11: {ppid: 10, ticks: 50, threads: 1, rssPage: 2},
		12: {ppid: 11, ticks: 1, threads: 1, rssPage: 1},
		20: {ppid: 1, ticks: 999, threads: 9, rssPage: 99}, // someone else's
	}
	u := treeUsage(procs, 10)
	if *u.CPUNSec != 151*10_000_000 || *u.Tasks != 7 || *u.MemoryBytes != 13*uint64(os.Getpagesize()) {
		t.Fatalf("treeUsage = cpu %d tasks %d mem %d", *u.CPUNSec, *u.Tasks, *u.MemoryBytes)
	}
	st, ok := parseStat([]byte("42 (a) b) S 7 42 42 0 -1 4194560 100 0 0 0 3 4 5 6 20 0 3 0 100 1000 77 x"))
	if !ok || st.ppid != 7 || st.ticks != 18 || st.threads != 3 || st.rssPage != 77 {
		t.Fatalf("parseStat = %+v, %v", st, ok)
	}
	self, _ := os.ReadFile("/proc/" + strconv.Itoa(os.Getpid()) + "/stat")
	if st, ok := parseStat(self); !ok || st.threads == 0 || st.rssPage == 0 {
		t.Fatalf("parseStat(self) = %+v, %v", st, ok)
	}
}

// LimitProperties resolves the user's groups through the Policy's user database and
// builds the properties; no limits configured is no properties.
func TestLimitsFor(t *testing.T) {
	name, _ := target(t)
	group := primaryGroup(t)
	l := config.Limits{
		Default: config.LimitSet{MemoryMax: "1G"},
		Groups:  []config.GroupLimits{{Group: "no-such-group-xyz", LimitSet: config.LimitSet{MemoryMax: "3G"}}, {Group: group, LimitSet: config.LimitSet{MemoryMax: "2G", CPUWeight: "50"}}},
	}
	props, err := LimitProperties(context.Background(), l, Policy{}, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 2 || props[0].Name != "MemoryMax" || props[0].Value != 2<<30 || props[1].Value != 50 {
		t.Fatalf("LimitProperties = %+v", props)
	}
	if props, err := LimitProperties(context.Background(), config.Limits{}, Policy{}, name); err != nil || props != nil {
		t.Fatalf("no limits = %v, %v", props, err)
	}
	if _, err := LimitProperties(context.Background(), l, Policy{}, "no-such-user-xyz"); err == nil {
		t.Fatal("limits for an unknown user resolved")
	}
	if got := describe(props); got != "MemoryMax=2147483648 CPUWeight=50" {
		t.Fatalf("describe = %q", got)
	}
}

// Percentages go to systemd as the ...Scale properties, typed "u" as
// systemctl sends them; everything else as "t".
func TestBusProperties(t *testing.T) {
	l := config.Limits{Default: config.LimitSet{MemoryMax: "50%", CPUWeight: "300", TasksMax: "10%"}}
	props, err := l.Properties(l.Default)
	if err != nil {
		t.Fatal(err)
	}
	got := busProperties(props)
	want := map[string]string{"MemoryMaxScale": "@u 2147483648", "CPUWeight": "@t 300", "TasksMaxScale": "@u 429496730"}
	if len(got) != len(want) {
		t.Fatalf("busProperties = %v", got)
	}
	for _, p := range got {
		if s := p.Value.String(); s != want[p.Name] {
			t.Errorf("%s = %s, want %s", p.Name, s, want[p.Name])
		}
	}
}

// What systemd could not count comes from the executor's process tree,
// and only that: CPU stays systemd's, IO stays unknown with its reason.
func TestFromProcTree(t *testing.T) {
	cpu, mem, tasks, treeCPU := uint64(5), uint64(4096), uint64(3), uint64(99)
	u := Usage{CPUNSec: &cpu, Source: "systemd", Unavailable: []string{"memory: none", "tasks: none", "io_read: off"}}
	got := fromProcTree(u, Usage{CPUNSec: &treeCPU, MemoryBytes: &mem, Tasks: &tasks})
	if *got.CPUNSec != 5 || *got.MemoryBytes != 4096 || *got.Tasks != 3 || got.Source != "systemd+proc" {
		t.Errorf("%+v", got)
	}
	if len(got.Unavailable) != 1 || got.Unavailable[0] != "io_read: off" {
		t.Errorf("unavailable %v", got.Unavailable)
	}
}
