package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/account"
)

// Limits are the cgroup resource limits of executors: a default, then
// each group override the user is in (in file order), then the user's
// own, each key of a later one replacing the earlier. The daemon sets
// them as runtime properties of agor-executor@USER.service.
type Limits struct {
	Default LimitSet            `yaml:"default"`
	Groups  []GroupLimits       `yaml:"groups"`
	Users   map[string]LimitSet `yaml:"users"`
}

// GroupLimits is an override for the members of Group.
type GroupLimits struct {
	Group    string `yaml:"group"`
	LimitSet `yaml:",inline"`
}

// LimitSet holds values as systemd.resource-control(5) writes them; ""
// leaves the key to the level below.
type LimitSet struct {
	MemoryMax  string `yaml:"memory_max"`  // bytes with K/M/G/T/P/E (base 1024), "infinity" or "N%" of RAM
	MemoryHigh string `yaml:"memory_high"` // as memory_max
	CPUWeight  string `yaml:"cpu_weight"`  // 1..10000
	CPUQuota   string `yaml:"cpu_quota"`   // "N%" of one CPU (200% is two), or "infinity"
	TasksMax   string `yaml:"tasks_max"`   // a count, "infinity" or "N%" of the system's maximum
	IOWeight   string `yaml:"io_weight"`   // 1..10000
}

// Property is one systemd unit property as SetUnitProperties takes it.
type Property struct {
	Key   string // the configuration key, for messages
	Name  string // e.g. MemoryMax, MemoryMaxScale, CPUQuotaPerSecUSec
	Value uint64 // a uint32 for the ...Scale properties
}

// Scaled reports whether Value is a fraction of 2^32-1 (a percentage)
// rather than the value itself; systemd turns it into the value.
func (p Property) Scaled() bool { return strings.HasSuffix(p.Name, "Scale") }

// Shown is the property an operator reads back (systemctl show): the
// ...Scale properties are shown as the value systemd computed.
func (p Property) Shown() string { return strings.TrimSuffix(p.Name, "Scale") }

// Unset is what every property shows when nothing limits it: infinity or
// "[not set]", both UINT64_MAX on the bus.
const Unset = math.MaxUint64

// limitKeys are the keys in the order properties are built and shown.
var limitKeys = []string{"memory_max", "memory_high", "cpu_weight", "cpu_quota", "tasks_max", "io_weight"}

func (s LimitSet) get(key string) string {
	switch key {
	case "memory_max":
		return s.MemoryMax
	case "memory_high":
		return s.MemoryHigh
	case "cpu_weight":
		return s.CPUWeight
	case "cpu_quota":
		return s.CPUQuota
	case "tasks_max":
		return s.TasksMax
	}
	return s.IOWeight
}

func (s *LimitSet) set(key, v string) {
	switch key {
	case "memory_max":
		s.MemoryMax = v
	case "memory_high":
		s.MemoryHigh = v
	case "cpu_weight":
		s.CPUWeight = v
	case "cpu_quota":
		s.CPUQuota = v
	case "tasks_max":
		s.TasksMax = v
	default:
		s.IOWeight = v
	}
}

// Over is s laid over base: each key s sets replaces base's.
func (s LimitSet) Over(base LimitSet) LimitSet {
	for _, k := range limitKeys {
		if v := s.get(k); v != "" {
			base.set(k, v)
		}
	}
	return base
}

// Empty reports whether no limit is configured anywhere: the daemon then
// leaves the units' properties alone.
func (l Limits) Empty() bool {
	return len(l.managed()) == 0
}

// managed are the keys named anywhere in the section. Only these are set,
// and for everyone: a user with no value for one gets no limit (Unset),
// so removing a user's override takes effect too. Keys named nowhere are
// never touched, so a drop-in an operator wrote for them stands.
func (l Limits) managed() []string {
	var out []string
	for _, k := range limitKeys {
		named := l.Default.get(k) != ""
		for _, g := range l.Groups {
			named = named || g.get(k) != ""
		}
		for _, u := range l.Users {
			named = named || u.get(k) != ""
		}
		if named {
			out = append(out, k)
		}
	}
	return out
}

// For is user's effective set: the default, each group override in file
// order whose group inGroup reports the user in, then the user's own.
func (l Limits) For(user string, inGroup func(group string) (bool, error)) (LimitSet, error) {
	eff := l.Default
	for _, g := range l.Groups {
		in, err := inGroup(g.Group)
		if err != nil {
			return LimitSet{}, fmt.Errorf("limits for %s: group %s: %w", user, g.Group, err)
		}
		if in {
			eff = g.LimitSet.Over(eff)
		}
	}
	if u, ok := l.Users[user]; ok {
		eff = u.Over(eff)
	}
	return eff, nil
}

// Properties are the unit properties that put s in force: one for each
// managed key, Unset where s has no value.
func (l Limits) Properties(s LimitSet) ([]Property, error) {
	keys := l.managed()
	out := make([]Property, 0, len(keys))
	for _, k := range keys {
		p, err := property(k, s.get(k))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// property parses one value as systemd.resource-control(5) reads it.
func property(key, v string) (Property, error) {
	p := Property{Key: key}
	var err error
	switch key {
	case "memory_max", "memory_high":
		p.Name = map[string]string{"memory_max": "MemoryMax", "memory_high": "MemoryHigh"}[key]
		p.Value, err = sizeOrPercent(v, &p.Name)
	case "cpu_weight", "io_weight":
		p.Name = map[string]string{"cpu_weight": "CPUWeight", "io_weight": "IOWeight"}[key]
		p.Value, err = weight(v)
	case "cpu_quota":
		p.Name = "CPUQuotaPerSecUSec"
		p.Value, err = quota(v)
	case "tasks_max":
		p.Name = "TasksMax"
		p.Value, err = tasks(v, &p.Name)
	}
	return p, err
}

func sizeOrPercent(v string, name *string) (uint64, error) {
	switch {
	case v == "" || v == "infinity":
		return Unset, nil
	case strings.HasSuffix(v, "%"):
		*name += "Scale"
		return percentScale(v)
	}
	return ParseSize(v)
}

func tasks(v string, name *string) (uint64, error) {
	switch {
	case v == "" || v == "infinity":
		return Unset, nil
	case strings.HasSuffix(v, "%"):
		*name += "Scale"
		return percentScale(v)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || n == Unset {
		return 0, fmt.Errorf("%q is not a positive count, \"infinity\" or a percentage", v)
	}
	return n, nil
}

func weight(v string) (uint64, error) {
	if v == "" {
		return Unset, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < 1 || n > 10000 {
		return 0, fmt.Errorf("%q is not a weight between 1 and 10000", v)
	}
	return n, nil
}

// quota is CPUQuota= as systemd keeps it: microseconds of CPU time per
// second of wall time.
func quota(v string) (uint64, error) {
	if v == "" || v == "infinity" {
		return Unset, nil
	}
	pm, err := permyriad(v, false)
	if err != nil || pm == 0 {
		return 0, fmt.Errorf("%q is not a positive percentage (200%% is two CPUs) or \"infinity\"", v)
	}
	return pm * 1_000_000 / 10_000, nil
}

// percentScale is a percentage of at most 100% as the ...Scale
// properties take it: a fraction of 2^32-1, as systemctl sends it.
func percentScale(v string) (uint64, error) {
	pm, err := permyriad(v, true)
	if err != nil || pm == 0 {
		return 0, fmt.Errorf("%q is not a percentage above 0%% and at most 100%%", v)
	}
	return (pm*math.MaxUint32 + 5_000) / 10_000, nil // rounded to the closest, as systemd does
}

// permyriad parses "N%" or "N.NN%" (systemd keeps two decimals) into
// hundredths of a percent; atMost100 refuses more than 100%.
func permyriad(v string, atMost100 bool) (uint64, error) {
	num, ok := strings.CutSuffix(v, "%")
	if !ok {
		return 0, errors.New("no %")
	}
	whole, frac, _ := strings.Cut(num, ".")
	if len(frac) > 2 || whole == "" {
		return 0, errors.New("at most two decimals")
	}
	frac += strings.Repeat("0", 2-len(frac))
	w, err := strconv.ParseUint(whole, 10, 32)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseUint(frac, 10, 8)
	if err != nil {
		return 0, err
	}
	pm := w*100 + f
	if atMost100 && pm > 10_000 {
		return 0, errors.New("above 100%")
	}
	return pm, nil
}

// sizeUnits are systemd's size suffixes (parse_size with base 1024).
var sizeUnits = map[byte]uint{'K': 10, 'M': 20, 'G': 30, 'T': 40, 'P': 50, 'E': 60}

// ParseSize reads a byte size as systemd does for MemoryMax=: digits with
// an optional fraction and one suffix of B, K, M, G, T, P, E (base 1024),
// e.g. "2G", "1.5G", "512M", "1073741824". Zero is refused.
func ParseSize(v string) (uint64, error) {
	bad := fmt.Errorf("%q is not a size (e.g. 2G, 512M, 1.5G), \"infinity\" or a percentage", v)
	num, shift := strings.TrimSuffix(v, "B"), uint(0)
	if n := len(num); n > 0 {
		if s, ok := sizeUnits[num[n-1]]; ok {
			num, shift = num[:n-1], s
		}
	}
	whole, frac, _ := strings.Cut(num, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || strings.ContainsAny(frac, "+-") {
		return 0, bad
	}
	if w > (Unset-1)>>shift {
		return 0, fmt.Errorf("%q is too large", v)
	}
	n := w << shift
	if frac != "" {
		f, err := strconv.ParseFloat("0."+frac, 64)
		if err != nil || shift == 0 {
			return 0, bad
		}
		n += uint64(f * float64(uint64(1)<<shift))
		if n < w<<shift || n == Unset {
			return 0, fmt.Errorf("%q is too large", v)
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%q: zero is not a limit", v)
	}
	return n, nil
}

func (l Limits) validate() error {
	if err := l.Default.validate("limits.default"); err != nil {
		return err
	}
	for i, g := range l.Groups {
		key := fmt.Sprintf("limits.groups[%d]", i)
		if err := account.ValidName(g.Group); err != nil {
			return fmt.Errorf("%s.group: %v", key, err)
		}
		if err := g.validate(key); err != nil {
			return err
		}
	}
	for name, s := range l.Users {
		if err := account.ValidName(name); err != nil {
			return fmt.Errorf("limits.users: %v", err)
		}
		if err := s.validate("limits.users." + name); err != nil {
			return err
		}
	}
	return nil
}

func (s LimitSet) validate(prefix string) error {
	for _, k := range limitKeys {
		if _, err := property(k, s.get(k)); err != nil {
			return fmt.Errorf("%s.%s: %w", prefix, k, err)
		}
	}
	return nil
}
