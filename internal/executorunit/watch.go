package executorunit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// UnitChange is a change of state of a user's executor unit.
type UnitChange struct {
	User  string
	Kind  string // "socket" or "service"
	State string // ActiveState: active, activating, deactivating, inactive, failed
	Sub   string // SubState: running, listening, dead, failed, ...
	// The slurm backend's: the job, and the node it runs on.
	JobID, Node string
}

// Ended reports whether a service event means the executor process is gone.
func (e UnitChange) Ended() bool {
	return e.Kind == "service" && (e.State == "inactive" || e.State == "failed")
}

const (
	unitPaths      = "/org/freedesktop/systemd1/unit"
	executorPrefix = unitPaths + "/agor_2dexecutor_40" // "agor-executor@", bus-escaped
	envPrefix      = unitPaths + "/agor_2denv_2d"      // "agor-env-": an environment's executors
	unitInterface  = "org.freedesktop.systemd1.Unit"
)

// Watch follows executor units through systemd's PropertiesChanged
// signals (no polling) and calls fn for each change of ActiveState, until
// ctx ends. A dropped bus connection is rebuilt after a second.
func (s *Systemd) Watch(ctx context.Context, fn func(UnitChange)) error {
	for {
		err := s.watchOnce(ctx, fn)
		if ctx.Err() != nil {
			return nil
		}
		s.log().Warn("D-Bus signal watch ended; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func (s *Systemd) watchOnce(ctx context.Context, fn func(UnitChange)) error {
	conn, err := godbus.ConnectSystemBus(godbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the system bus: %w", err)
	}
	defer conn.Close()
	err = conn.AddMatchSignalContext(ctx,
		godbus.WithMatchInterface("org.freedesktop.DBus.Properties"),
		godbus.WithMatchMember("PropertiesChanged"),
		godbus.WithMatchPathNamespace(unitPaths),
		godbus.WithMatchArg(0, unitInterface))
	if err != nil {
		return fmt.Errorf("add signal match: %w", err)
	}
	ch := make(chan *godbus.Signal, 256)
	conn.Signal(ch)
	// Without a subscriber systemd emits no unit signals at all.
	if err := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		CallWithContext(ctx, "org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		return fmt.Errorf("subscribe to systemd: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig, ok := <-ch:
			if !ok {
				return errors.New("bus connection closed")
			}
			if ev, ok := unitEvent(sig); ok {
				fn(ev)
			}
		}
	}
}

// unitEvent reads a PropertiesChanged signal of an executor unit; other
// units and changes without ActiveState are skipped.
func unitEvent(sig *godbus.Signal) (UnitChange, bool) {
	path := string(sig.Path)
	ours := strings.HasPrefix(path, executorPrefix) || strings.HasPrefix(path, envPrefix)
	if !ours || len(sig.Body) < 2 {
		return UnitChange{}, false
	}
	changed, ok := sig.Body[1].(map[string]godbus.Variant)
	if !ok {
		return UnitChange{}, false
	}
	active, ok := changed["ActiveState"].Value().(string)
	if !ok {
		return UnitChange{}, false
	}
	name, err := unescapePath(path[len(unitPaths)+1:])
	if err != nil {
		return UnitChange{}, false
	}
	user, kind, ok := parseUnit(name)
	if !ok {
		return UnitChange{}, false
	}
	sub, _ := changed["SubState"].Value().(string)
	return UnitChange{User: user, Kind: kind, State: active, Sub: sub}, true
}

// unescapePath undoes sd_bus_path_encode: every byte other than
// [A-Za-z0-9] is written as _XX.
func unescapePath(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}
