package config

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const limitsYAML = `
limits:
  default: {memory_max: 2G, cpu_weight: 100, tasks_max: 512}
  groups:
    - {group: agorusers, memory_max: 4G, cpu_quota: 200%}
    - {group: heavy, memory_max: 8G, io_weight: 500}
  users:
    alice: {memory_max: 1.5G, tasks_max: infinity}
`

func TestLimitsResolve(t *testing.T) {
	c, err := Parse(strings.NewReader(limitsYAML))
	if err != nil {
		t.Fatal(err)
	}
	member := map[string][]string{"alice": {"agorusers"}, "bob": {"agorusers", "heavy"}, "carol": nil}
	tests := []struct {
		user string
		want LimitSet
	}{
		{"carol", LimitSet{MemoryMax: "2G", CPUWeight: "100", TasksMax: "512"}},
		{"bob", LimitSet{MemoryMax: "8G", CPUWeight: "100", TasksMax: "512", CPUQuota: "200%", IOWeight: "500"}},
		{"alice", LimitSet{MemoryMax: "1.5G", CPUWeight: "100", TasksMax: "infinity", CPUQuota: "200%"}},
	}
	for _, tc := range tests {
		got, err := c.Limits.For(tc.user, func(g string) (bool, error) {
			for _, m := range member[tc.user] {
				if m == g {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.user, diff)
		}
	}
	lookup := errors.New("directory down")
	if _, err := c.Limits.For("x", func(string) (bool, error) { return false, lookup }); !errors.Is(err, lookup) {
		t.Errorf("a failed group lookup = %v, want it returned", err)
	}
}

func TestLimitsProperties(t *testing.T) {
	c, err := Parse(strings.NewReader(limitsYAML))
	if err != nil {
		t.Fatal(err)
	}
	props, err := c.Limits.Properties(LimitSet{MemoryMax: "1.5G", CPUWeight: "100", TasksMax: "infinity", CPUQuota: "200%"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{
		{"memory_max", "MemoryMax", 3 << 29},
		{"cpu_weight", "CPUWeight", 100},
		{"cpu_quota", "CPUQuotaPerSecUSec", 2_000_000},
		{"tasks_max", "TasksMax", math.MaxUint64},
		{"io_weight", "IOWeight", math.MaxUint64}, // named for another: unset here
	}
	if diff := cmp.Diff(want, props); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if (Limits{}).Empty() != true || c.Limits.Empty() {
		t.Error("Empty: wrong")
	}
	none, _ := (Limits{}).Properties(LimitSet{})
	if len(none) != 0 {
		t.Errorf("no limits configured = %v, want no properties", none)
	}
}

func TestLimitValues(t *testing.T) {
	tests := []struct {
		key, v string
		name   string
		want   uint64
	}{
		{"memory_max", "2G", "MemoryMax", 2 << 30},
		{"memory_max", "512M", "MemoryMax", 512 << 20},
		{"memory_max", "1073741824", "MemoryMax", 1 << 30},
		{"memory_max", "100K", "MemoryMax", 100 << 10},
		{"memory_max", "infinity", "MemoryMax", math.MaxUint64},
		{"memory_high", "50%", "MemoryHighScale", math.MaxUint32/2 + 1},
		{"memory_max", "100%", "MemoryMaxScale", math.MaxUint32},
		{"cpu_quota", "50%", "CPUQuotaPerSecUSec", 500_000},
		{"cpu_quota", "12.5%", "CPUQuotaPerSecUSec", 125_000},
		{"tasks_max", "4096", "TasksMax", 4096},
		{"tasks_max", "10%", "TasksMaxScale", math.MaxUint32/10 + 1},
		{"io_weight", "10000", "IOWeight", 10000},
	}
	for _, tc := range tests {
		p, err := property(tc.key, tc.v)
		if err != nil || p.Name != tc.name || p.Value != tc.want {
			t.Errorf("%s=%s = %+v, %v; want %s=%d", tc.key, tc.v, p, err, tc.name, tc.want)
		}
	}
}

func TestLimitErrorsNameTheKey(t *testing.T) {
	tests := map[string]string{
		"limits: {default: {memory_max: 2Q}}":                     "limits.default.memory_max",
		"limits: {default: {memory_max: 0}}":                      "limits.default.memory_max",
		"limits: {default: {memory_max: -1G}}":                    "limits.default.memory_max",
		"limits: {default: {memory_high: 101%}}":                  "limits.default.memory_high",
		"limits: {default: {memory_max: 99999999999E}}":           "limits.default.memory_max",
		"limits: {default: {cpu_weight: 0}}":                      "limits.default.cpu_weight",
		"limits: {default: {cpu_weight: 10001}}":                  "limits.default.cpu_weight",
		"limits: {default: {cpu_quota: 2}}":                       "limits.default.cpu_quota",
		"limits: {default: {cpu_quota: 0%}}":                      "limits.default.cpu_quota",
		"limits: {default: {cpu_quota: 1.234%}}":                  "limits.default.cpu_quota",
		"limits: {default: {tasks_max: lots}}":                    "limits.default.tasks_max",
		"limits: {default: {io_weight: x}}":                       "limits.default.io_weight",
		"limits: {groups: [{group: 'bad/name', memory_max: 1G}]}": "limits.groups[0].group",
		"limits: {groups: [{group: ok, tasks_max: 0}]}":           "limits.groups[0].tasks_max",
		"limits: {users: {alice: {memory_max: 1X}}}":              "limits.users.alice.memory_max",
		"limits: {users: {'a/b': {memory_max: 1G}}}":              "limits.users",
		"limits: {default: {memory_maximum: 1G}}":                 "memory_maximum",
		"limits: {groups: [{group: ok, memory: 1G}]}":             "memory",
	}
	for in, key := range tests {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %s", in, err, key)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2G", "1.5G", "0", "18446744073709551615", "16E", "1.G", ".5K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && (n == 0 || n == Unset) {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}
