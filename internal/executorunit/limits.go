package executorunit

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/envdef"
	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// LimitProperties are the unit properties that put user's configured limits in force
// (none when the configuration names no limit).
func LimitProperties(ctx context.Context, l config.Limits, p Policy, user string) ([]config.Property, error) {
	if l.Empty() {
		return nil, nil
	}
	u, err := p.Resolver().LookupName(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	set, err := l.For(user, func(g string) (bool, error) { return p.Resolver().InGroup(ctx, u, g) })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLookupFailed, err)
	}
	return l.Properties(set)
}

// applyLimits sets user's limits as runtime properties of the service
// unit (drop-ins under /run/systemd/system.control), before the socket
// can start it and live on a running one. What was last applied is
// remembered, so each Ensure costs a call only when something changed.
func (s *Systemd) applyLimits(ctx context.Context, user string) error {
	account, _ := envdef.SplitKey(user) // her limits, wherever her executor runs
	props, err := LimitProperties(ctx, s.Limits, s.Policy, account)
	if err != nil || len(props) == 0 {
		return err
	}
	s.mu.Lock()
	same := slices.Equal(s.applied[user], props)
	s.mu.Unlock()
	if same {
		return nil
	}
	conn, err := s.bus(ctx)
	if err != nil {
		return err
	}
	unit := unitName(user, "service")
	if err := conn.SetUnitPropertiesContext(ctx, unit, true, busProperties(props)...); err != nil {
		return s.dbusErr("set limits on "+unit, err)
	}
	s.mu.Lock()
	if s.applied == nil {
		s.applied = map[string][]config.Property{}
	}
	s.applied[user] = props
	s.mu.Unlock()
	s.log().Info("executor limits set", "user", user, "unit", unit, "limits", describe(props))
	return nil
}

// ApplyLimits sets user's configured limits on the unit now, whatever
// was applied before (the daemon calls it for running executors when it
// starts, so a changed configuration reaches them).
func (s *Systemd) ApplyLimits(ctx context.Context, user string) error {
	s.mu.Lock()
	delete(s.applied, user)
	s.mu.Unlock()
	return s.applyLimits(ctx, user)
}

func busProperties(props []config.Property) []sd.Property {
	out := make([]sd.Property, 0, len(props))
	for _, p := range props {
		v := godbus.MakeVariant(p.Value)
		if p.Scaled() {
			v = godbus.MakeVariant(uint32(min(p.Value, math.MaxUint32)))
		}
		out = append(out, sd.Property{Name: p.Name, Value: v})
	}
	return out
}

// describe is props as one log field: "MemoryMax=2147483648 CPUWeight=unset".
func describe(props []config.Property) string {
	var b []byte
	for i, p := range props {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p.Name...)
		b = append(b, '=')
		if p.Value == config.Unset {
			b = append(b, "unset"...)
		} else {
			b = fmt.Appendf(b, "%d", p.Value)
		}
	}
	return string(b)
}
