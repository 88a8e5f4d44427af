package executorunit

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/protocol"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

var binary string

func TestMain(m *testing.M) { exectest.Main(m, &binary) }

func target(t *testing.T) (string, int) { return exectest.Target(t) }

func TestPolicy(t *testing.T) {
	name, uid := target(t)
	tests := []struct {
		pol  Policy
		user string
		want error
	}{
		{Policy{MinUID: 1}, name, nil},
		{Policy{MinUID: 1}, "root", ErrNotAllowed},
		{Policy{MinUID: uid + 1}, name, ErrNotAllowed},
		{Policy{MinUID: 1}, "no-such-user-xyz", ErrNoSuchUser},
		{Policy{MinUID: 1}, "Bad/Name", ErrInvalidUser},
		{Policy{MinUID: 1}, "../etc", ErrInvalidUser},
		{Policy{MinUID: 1, AllowedUsers: []string{"someone-else"}}, name, ErrNotAllowed},
		{Policy{MinUID: 1, AllowedUsers: []string{name}}, name, nil},
		{Policy{MinUID: 1, AllowedGroups: []string{"no-such-group-xyz"}}, name, ErrNotAllowed},
		{Policy{MinUID: 1, AllowedGroups: []string{primaryGroup(t)}}, name, nil},
		{Policy{MinUID: 1, Accounts: identity.New(identity.NSS{Getent: "/bin/false"})}, name, ErrLookupFailed},
		{Policy{MinUID: 1}, "1000", ErrInvalidUser},
		{Policy{MinUID: 1000}, "nobody", ErrNotAllowed}, // uid 65534 passes min_uid; refused as special
	}
	for _, tc := range tests {
		_, err := tc.pol.Check(context.Background(), tc.user)
		if !errors.Is(err, tc.want) {
			t.Errorf("%+v Check(%q) = %v, want %v", tc.pol, tc.user, err, tc.want)
		}
	}
}

// primaryGroup names the target user's primary group.
func primaryGroup(t *testing.T) string {
	name, _ := target(t)
	u, err := user.Lookup(name)
	if err != nil {
		t.Skip(err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Skip(err)
	}
	return g.Name
}

func TestUnitNames(t *testing.T) {
	for name, unit := range map[string]string{
		"alice":               "agor-executor@alice.socket",
		"ada.lovelace":        "agor-executor@ada.lovelace.socket",
		"mary-jane":           `agor-executor@mary\x2djane.socket`,
		"jsmith@corp.example": `agor-executor@jsmith\x40corp.example.socket`,
	} {
		if got := unitName(name, "socket"); got != unit {
			t.Errorf("unitName(%q) = %q, want %q", name, got, unit)
		}
		if u, kind, ok := parseUnit(unit); !ok || u != name || kind != "socket" {
			t.Errorf("parseUnit(%q) = %q, %q, %v", unit, u, kind, ok)
		}
	}
	if _, _, ok := parseUnit("agor-executor@bad-dash.service"); ok {
		t.Error("an unescaped '-' was taken for a user name")
	}
}

func direct(t *testing.T, idle time.Duration) (*Direct, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-direct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Direct{
		Policy:      Policy{MinUID: 1, SocketTemplate: filepath.Join(dir, "executors", "{user}.sock")},
		Binary:      binary,
		IdleTimeout: idle,
	}
	t.Cleanup(d.Close)
	return d, dir
}

func ping(t *testing.T, sock string) protocol.PingResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, sock, nil, rpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res protocol.PingResult
	if err := c.Call(ctx, protocol.MethodPing, nil, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// The direct backend starts the executor as the user, on a socket handed
// over as systemd would, and starts it again after it exits when idle.
func TestDirectEnsureAndReactivate(t *testing.T) {
	name, uid := target(t)
	d, _ := direct(t, 200*time.Millisecond)
	ex, err := d.Ensure(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	first := ping(t, ex.Socket)
	if first.UID != uid || first.User != name {
		t.Fatalf("ping = %+v, want uid %d user %s", first, uid, name)
	}
	waitStopped(t, d, name)
	if _, err := d.Ensure(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	second := ping(t, ex.Socket)
	if second.PID == first.PID {
		t.Fatalf("same executor pid %d after idle exit", first.PID)
	}
	if err := d.Stop(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ex.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after Stop: %v", err)
	}
}

func TestDirectRefusesBeforeStarting(t *testing.T) {
	d, dir := direct(t, 0)
	for _, u := range []string{"root", "no-such-user-xyz", "x/y"} {
		if _, err := d.Ensure(context.Background(), u); err == nil {
			t.Errorf("Ensure(%q) succeeded", u)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "executors")); len(entries) != 0 {
		t.Fatalf("refused users left sockets: %v", entries)
	}
	if list, _ := d.List(context.Background()); len(list) != 0 {
		t.Fatalf("List after refusals = %v", list)
	}
}

func waitStopped(t *testing.T, d *Direct, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, _ := d.List(context.Background())
		if len(list) == 1 && list[0].Service == "inactive" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("executor for %s did not exit when idle: %+v", name, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseUnit(t *testing.T) {
	for in, want := range map[string][2]string{
		"agor-executor@alice.socket":       {"alice", "socket"},
		`agor-executor@bob\x2d2.service`:   {"bob-2", "service"},
		"agor-env-py313@alice.socket":      {"alice:py313", "socket"},
		`agor-env-deb-13@bob\x2d2.service`: {"bob-2:deb-13", "service"},
	} {
		u, k, ok := parseUnit(in)
		if !ok || u != want[0] || k != want[1] {
			t.Errorf("parseUnit(%q) = %q %q %v", in, u, k, ok)
		}
	}
	for _, foreign := range []string{"other@x.service", "agor-env-@x.service", "agor-env-Py@x.service", "agor-executors.slice"} {
		if _, _, ok := parseUnit(foreign); ok {
			t.Errorf("parsed a foreign unit %q", foreign)
		}
	}
	for _, key := range []string{"alice", "alice:py313", "bob-2:deb-13"} {
		if got, _, _ := parseUnit(unitName(key, "service")); got != key {
			t.Errorf("parseUnit(unitName(%q)) = %q", key, got)
		}
	}
}

func TestStatExiting(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want bool
	}{
		{"42 (agor-executor) S 1 42 42 0 -1 4194560 100 0", false},
		{"42 (agor-executor) R 1 42 42 0 -1 4194564 100 0", true}, // PF_EXITING
		{"42 (a) b) Z 1 42 42 0 -1 4194560 100 0", true},
		{"42 (x) X 1 42 42 0 -1 0", true},
		{"42 (x) S 1", true}, // too short to trust
		{"garbage", true},
	} {
		if got := statExiting([]byte(tc.stat)); got != tc.want {
			t.Errorf("statExiting(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil || statExiting(self) {
		t.Fatalf("this live process reads as exiting (%v): %s", err, self)
	}
}

// The direct backend cannot give an executor a network namespace: a
// person under proxy or none is refused before anything starts, naming
// why; one under open is served.
func TestDirectRefusesConfinedNetwork(t *testing.T) {
	name, _ := target(t)
	d, dir := direct(t, 0)
	mode := config.NetworkProxy
	d.Network = func(context.Context, string) (config.NetworkSet, error) { return config.NetworkSet{Mode: mode}, nil }
	for _, m := range []string{config.NetworkProxy, config.NetworkNone} {
		mode = m
		_, err := d.Ensure(context.Background(), name)
		if !errors.Is(err, ErrNetworkUnenforced) || !strings.Contains(err.Error(), "direct backend cannot enforce") {
			t.Errorf("mode %s: Ensure = %v", m, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "executors")); len(entries) != 0 {
		t.Fatalf("refused person left sockets: %v", entries)
	}
	mode = config.NetworkOpen
	if _, err := d.Ensure(context.Background(), name); err != nil {
		t.Errorf("open: %v", err)
	}
}

// TestCheckKey: in an environment, the account's policy and then the
// environment's definition decide; the socket is in the environment's
// directory. Backends without environments refuse their keys.
func TestCheckKey(t *testing.T) {
	dir := t.TempDir()
	// A stand-in getent knows one account, whoever runs the test.
	getent := filepath.Join(dir, "getent")
	script := "#!/bin/sh\ncase \"$1 $3\" in\n\"passwd ada\"|\"passwd 1500\") echo 'ada:x:1500:1500::/home/ada:/bin/sh';;\n*) exit 2;;\nesac\n"
	if err := os.WriteFile(getent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	me := &user.User{Username: "ada"}
	for name, users := range map[string][]string{"open": {me.Username}, "closed": {"someone-else"}} {
		if err := envdef.Save(dir, envdef.Definition{Name: name, Root: "/srv/" + name, Agents: envdef.AgentsHost, Users: users}); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{SocketTemplate: "/run/agor/executors/{user}.sock", EnvironmentsDir: dir, Accounts: identity.New(identity.NSS{Getent: getent})}
	ctx := context.Background()
	ex, err := p.CheckKey(ctx, envdef.Key(me.Username, "open"))
	if want := "/run/agor/executors/open/" + account.Escape(me.Username) + ".sock"; err != nil || ex.Socket != want {
		t.Errorf("CheckKey(open) = %+v, %v; want socket %s", ex, err, want)
	}
	if _, err := p.CheckKey(ctx, envdef.Key(me.Username, "closed")); !errors.Is(err, ErrEnvironmentNotAllowed) {
		t.Errorf("CheckKey(closed) = %v, want ErrEnvironmentNotAllowed", err)
	}
	if _, err := p.CheckKey(ctx, envdef.Key(me.Username, "gone")); !errors.Is(err, ErrNoSuchEnvironment) {
		t.Errorf("CheckKey(gone) = %v, want ErrNoSuchEnvironment", err)
	}
	if ex, err := p.CheckKey(ctx, me.Username); err != nil || ex.Socket != "/run/agor/executors/"+account.Escape(me.Username)+".sock" {
		t.Errorf("CheckKey(host) = %+v, %v", ex, err)
	}
	d := &Direct{Policy: p}
	if _, err := d.Ensure(ctx, envdef.Key(me.Username, "open")); !errors.Is(err, ErrEnvironmentUnsupported) {
		t.Errorf("direct Ensure in an environment = %v, want ErrEnvironmentUnsupported", err)
	}
}
