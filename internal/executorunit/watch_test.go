package executorunit

import (
	"testing"

	godbus "github.com/godbus/dbus/v5"
)

func TestUnitEvent(t *testing.T) {
	t.Parallel()
	changed := func(active, sub string) []any {
		m := map[string]godbus.Variant{"ActiveState": godbus.MakeVariant(active)}
		if sub != "" {
			m["SubState"] = godbus.MakeVariant(sub)
		}
		return []any{unitInterface, m, []string{}}
	}
	tests := []struct {
		path string
		body []any
		want UnitChange
		ok   bool
	}{
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40alice_2eservice", changed("failed", "failed"), UnitChange{User: "alice", Kind: "service", State: "failed", Sub: "failed"}, true},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40j_2edoe_5cx2dx_2esocket", changed("active", ""), UnitChange{User: "j.doe-x", Kind: "socket", State: "active"}, true},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40j_2edoe_2dx_2esocket", changed("active", ""), UnitChange{}, false}, // '-' unescaped: not ours
		{"/org/freedesktop/systemd1/unit/agor_2denv_2dpy313_40alice_2eservice", changed("inactive", "dead"), UnitChange{User: "alice:py313", Kind: "service", State: "inactive", Sub: "dead"}, true},
		{"/org/freedesktop/systemd1/unit/agor_2denv_2d_40alice_2eservice", changed("inactive", "dead"), UnitChange{}, false}, // no name
		{"/org/freedesktop/systemd1/unit/ssh_2eservice", changed("active", "running"), UnitChange{}, false},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40alice_2eservice", []any{unitInterface, map[string]godbus.Variant{"SubState": godbus.MakeVariant("x")}, []string{}}, UnitChange{}, false},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40alice_2", changed("active", ""), UnitChange{}, false},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40alice_zz", changed("active", ""), UnitChange{}, false},
		{"/org/freedesktop/systemd1/unit/agor_2dexecutor_40alice_2eservice", []any{unitInterface}, UnitChange{}, false},
	}
	for _, tc := range tests {
		got, ok := unitEvent(&godbus.Signal{Path: godbus.ObjectPath(tc.path), Body: tc.body})
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestEventEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev   UnitChange
		want bool
	}{
		{UnitChange{Kind: "service", State: "failed"}, true},
		{UnitChange{Kind: "service", State: "inactive"}, true},
		{UnitChange{Kind: "service", State: "active"}, false},
		{UnitChange{Kind: "socket", State: "failed"}, false},
	} {
		if got := tc.ev.Ended(); got != tc.want {
			t.Errorf("%+v: Ended %v, want %v", tc.ev, got, tc.want)
		}
	}
}
