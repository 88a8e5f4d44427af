package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/config"
)

// --- what the kernel enforces ----------------------------------------------------

// cgroupFiles name, for each property the daemon sets, the cgroup v2 file
// in which the kernel holds it. systemd's properties are what it was
// asked; only these files are what the kernel applies. A controller that
// is not enabled for the unit's cgroup (no delegation to a container, a
// v1 or hybrid hierarchy) leaves its file out, and then nothing is
// enforced however systemd shows the property.
var cgroupFiles = map[string]string{
	"MemoryMax":          "memory.max",
	"MemoryHigh":         "memory.high",
	"TasksMax":           "pids.max",
	"CPUWeight":          "cpu.weight",
	"CPUQuotaPerSecUSec": "cpu.max",
	"IOWeight":           "io.weight",
}

// kernelDefault is what a cgroup file holds when systemd leaves the
// property unset: no limit for the maxima, weight 100.
func kernelDefault(shown string) uint64 {
	if shown == "CPUWeight" || shown == "IOWeight" {
		return 100
	}
	return config.Unset
}

// errNotEnforced: the unit's cgroup lacks the file of a controller.
var errNotEnforced = errors.New("not enforced")

// kernelDiffs compares, for unit, what its cgroup's files hold with what
// systemd shows for each property (got, already compared with the
// configuration). A missing file is named as such: the kernel enforces
// nothing there.
func (d *Doctor) kernelDiffs(ctx context.Context, b Bus, unit string, got map[string]uint64) (diffs, missing []string) {
	cg, err := b.ControlGroup(ctx, unit)
	if err != nil || cg == "" {
		return []string{fmt.Sprintf("%s: its cgroup is unknown (%v)", unit, err)}, nil
	}
	dir := d.path(filepath.Join("/sys/fs/cgroup", cg))
	for _, shown := range slices.Sorted(maps.Keys(got)) {
		file, ok := cgroupFiles[shown]
		if !ok {
			continue
		}
		want := got[shown]
		if want == config.Unset {
			want = kernelDefault(shown)
		}
		have, err := readCgroupValue(filepath.Join(dir, file), shown)
		switch {
		case errors.Is(err, errNotEnforced):
			if want != kernelDefault(shown) {
				missing = append(missing, fmt.Sprintf("%s: %s has no %s, so the kernel enforces no %s", unit, dir, file, shown))
			}
		case err != nil:
			diffs = append(diffs, fmt.Sprintf("%s: %v", unit, err))
		case !kernelMatches(shown, have, want):
			diffs = append(diffs, fmt.Sprintf("%s: the kernel enforces %s %s, systemd holds %s=%s", unit, file, shownValue(have), shown, shownValue(want)))
		}
	}
	return diffs, missing
}

// readCgroupValue reads a cgroup v2 file as the value of property shown:
// "max" is Unset, cpu.max "QUOTA PERIOD" is microseconds a second, and
// io.weight's "default N" is N.
func readCgroupValue(path, shown string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, errNotEnforced
	}
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if shown == "IOWeight" && len(f) >= 2 && f[0] == "default" {
		f = f[1:]
	}
	if len(f) == 0 {
		return 0, fmt.Errorf("%s is empty", path)
	}
	if f[0] == "max" {
		return config.Unset, nil
	}
	v, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", path, f[0])
	}
	if shown == "CPUQuotaPerSecUSec" {
		if len(f) < 2 {
			return 0, fmt.Errorf("%s: %q has no period", path, b)
		}
		period, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || period == 0 {
			return 0, fmt.Errorf("%s: bad period %q", path, f[1])
		}
		v = v * 1_000_000 / period
	}
	return v, nil
}

// kernelMatches allows the kernel's rounding: memory to whole pages, the
// CPU quota to its period's granularity (within 1%).
func kernelMatches(shown string, have, want uint64) bool {
	if have == want || have == config.Unset || want == config.Unset {
		return have == want
	}
	diff := max(have, want) - min(have, want)
	switch shown {
	case "MemoryMax", "MemoryHigh":
		return diff < uint64(os.Getpagesize())
	case "CPUQuotaPerSecUSec":
		return diff <= want/100
	}
	return false
}
