package executorunit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/envdef"
	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Systemd manages agor-executor@USER units over systemd's D-Bus API; the
// polkit rule decides what the daemon's account may do.
type Systemd struct {
	Policy Policy
	Log    *slog.Logger
	// Dial opens the bus connection; nil means the system bus.
	Dial func(context.Context) (*sd.Conn, error)
	// Limits are set on each executor's service before it starts.
	Limits config.Limits
	// Network names a person's network set; under proxy or none their
	// unit must have PrivateNetwork=yes (nil: not checked).
	Network NetworkFunc
	// UsageWorkers bounds the D-Bus calls Usage has in flight at once
	// (0: DefaultUsageWorkers; 1 reads one property after another).
	UsageWorkers int

	mu      sync.Mutex
	conn    *sd.Conn
	applied map[string][]config.Property // user: limits last set on the unit
}

var _ Backend = (*Systemd)(nil)

// unitName is the unit of an executor key: agor-executor@USER for the
// host, agor-env-ENV@USER in an environment. The instance is the name as
// systemd escapes it (the unit gets it back with %I).
func unitName(key, kind string) string {
	user, env := envdef.SplitKey(key)
	prefix := "agor-executor"
	if env != "" {
		prefix = "agor-env-" + env
	}
	return prefix + "@" + account.Escape(user) + "." + kind
}

// Ensure starts the socket unit of user (an executor key) and waits for
// the job. A socket left failed (e.g. trigger-limit-hit) is reset and
// started once more.
func (s *Systemd) Ensure(ctx context.Context, user string) (Executor, error) {
	ex, err := s.Policy.CheckKey(ctx, user)
	if err != nil {
		return Executor{}, err
	}
	if err := s.checkNetwork(ctx, user); err != nil {
		return Executor{}, err
	}
	if err := s.applyLimits(ctx, user); err != nil {
		return Executor{}, err
	}
	unit := unitName(user, "socket")
	err = s.start(ctx, unit)
	if errors.Is(err, ErrUnitFailed) {
		s.log().Warn("executor socket failed; resetting", "user", user, "unit", unit)
		if rerr := s.resetFailed(ctx, unit); rerr != nil {
			return Executor{}, rerr
		}
		err = s.start(ctx, unit)
	}
	if err != nil {
		return Executor{}, err
	}
	return ex, nil
}

func (s *Systemd) start(ctx context.Context, unit string) error {
	conn, err := s.bus(ctx)
	if err != nil {
		return err
	}
	done := make(chan string, 1) // buffered: go-systemd must never block on it
	if _, err := conn.StartUnitContext(ctx, unit, "replace", done); err != nil {
		return s.dbusErr("start "+unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%w: start %s: job %s", ErrUnitFailed, unit, result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Systemd) resetFailed(ctx context.Context, unit string) error {
	conn, err := s.bus(ctx)
	if err != nil {
		return err
	}
	if err := conn.ResetFailedUnitContext(ctx, unit); err != nil {
		return s.dbusErr("reset-failed "+unit, err)
	}
	return nil
}

// Stop stops user's socket, then service: the socket first, so nothing
// re-activates the service being stopped.
func (s *Systemd) Stop(ctx context.Context, user string) error {
	conn, err := s.bus(ctx)
	if err != nil {
		return err
	}
	for _, unit := range []string{unitName(user, "socket"), unitName(user, "service")} {
		done := make(chan string, 1)
		if _, err := conn.StopUnitContext(ctx, unit, "replace", done); err != nil {
			return s.dbusErr("stop "+unit, err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// List reports loaded executor units, so a restarted daemon finds the
// executors that kept running.
func (s *Systemd) List(ctx context.Context) ([]Status, error) {
	conn, err := s.bus(ctx)
	if err != nil {
		return nil, err
	}
	units, err := conn.ListUnitsByPatternsContext(ctx, nil, []string{"agor-executor@*.socket", "agor-executor@*.service", "agor-env-*@*.socket", "agor-env-*@*.service"})
	if err != nil {
		return nil, s.dbusErr("list units", err)
	}
	byUser := map[string]*Status{}
	var order []string
	for _, u := range units {
		name, kind, ok := parseUnit(u.Name)
		if !ok {
			continue
		}
		st := byUser[name]
		if st == nil {
			st = &Status{User: name, Socket: "inactive", Service: "inactive"}
			byUser[name] = st
			order = append(order, name)
		}
		if kind == "socket" {
			st.Socket = u.ActiveState
		} else {
			st.Service = u.ActiveState
		}
	}
	out := make([]Status, 0, len(order))
	for _, n := range order {
		out = append(out, *byUser[n])
	}
	return out, nil
}

// parseUnit is unitName's inverse: the executor key and the kind.
func parseUnit(name string) (key, kind string, ok bool) {
	env := ""
	rest, found := strings.CutPrefix(name, "agor-executor@")
	if !found {
		var prefix string
		var isEnv bool
		prefix, rest, found = strings.Cut(name, "@")
		env, isEnv = strings.CutPrefix(prefix, "agor-env-")
		if !found || !isEnv || envdef.ValidName(env) != nil {
			return "", "", false
		}
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", "", false
	}
	user, err := account.Unescape(rest[:i])
	if err != nil {
		return "", "", false
	}
	return envdef.Key(user, env), rest[i+1:], true
}

// bus returns the connection, rebuilding it if it dropped: go-systemd's
// connection never reconnects by itself.
func (s *Systemd) bus(ctx context.Context) (*sd.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.Connected() {
		return s.conn, nil
	}
	if s.conn != nil {
		s.log().Warn("D-Bus connection lost; reconnecting")
		s.conn.Close()
	}
	dial := s.Dial
	if dial == nil {
		dial = sd.NewSystemConnectionContext
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over D-Bus: %w", err)
	}
	s.conn = conn
	s.applied = nil // a new bus may mean a restarted systemd: set limits again
	return conn, nil
}

// Close releases the bus connection.
func (s *Systemd) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// dbusErr recognises polkit's refusals, which come as either error name.
func (s *Systemd) dbusErr(what string, err error) error {
	switch errorName(err) {
	case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
		return fmt.Errorf("%w: %s: %v", ErrNotAuthorized, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errorName is a D-Bus error's name; godbus returns both Error and *Error.
func errorName(err error) string {
	var v godbus.Error
	if errors.As(err, &v) {
		return v.Name
	}
	var p *godbus.Error
	if errors.As(err, &p) && p != nil {
		return p.Name
	}
	return ""
}

func (s *Systemd) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
