package identity

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// self is the account running the tests, as Go's own reader sees it.
func self(t testing.TB) *user.User {
	u, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	return u
}

func TestNSSRealGetent(t *testing.T) {
	me := self(t)
	r := New(NSS{})
	ctx := context.Background()
	u, err := r.LookupName(ctx, me.Username)
	if err != nil || strconv.FormatUint(uint64(u.UID), 10) != me.Uid || u.Home != me.HomeDir {
		t.Fatalf("LookupName(%q) = %+v, %v; want uid %s home %s", me.Username, u, err, me.Uid, me.HomeDir)
	}
	byUID, err := r.LookupUID(ctx, u.UID)
	if err != nil || byUID != u {
		t.Fatalf("LookupUID(%d) = %+v, %v; want %+v", u.UID, byUID, err, u)
	}
	ids, err := r.GroupIDs(ctx, u)
	if err != nil || len(ids) == 0 || ids[0] != u.GID {
		t.Fatalf("GroupIDs = %v, %v", ids, err)
	}
	g, err := user.LookupGroupId(strconv.FormatUint(uint64(u.GID), 10))
	if err == nil {
		if byGID, err := r.LookupGID(ctx, u.GID); err != nil || byGID.Name != g.Name {
			t.Errorf("LookupGID(%d) = %+v, %v; want %s", u.GID, byGID, err, g.Name)
		}
		if in, err := r.InGroup(ctx, u, "no-such-group-agor", g.Name); err != nil || !in {
			t.Errorf("InGroup(%s) = %v, %v; want true (primary group)", g.Name, in, err)
		}
	}
	if in, err := r.InGroup(ctx, u, "no-such-group-agor"); err != nil || in {
		t.Errorf("InGroup(missing) = %v, %v; want false, nil", in, err)
	}
	for _, name := range []string{"no-such-user-agor", "ada.lovelace.not.here"} {
		if _, err := r.LookupName(ctx, name); !errors.Is(err, ErrNotFound) {
			t.Errorf("LookupName(%q) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := r.LookupUID(ctx, 4242424); !errors.Is(err, ErrNotFound) {
		t.Errorf("LookupUID(4242424) = %v, want ErrNotFound", err)
	}
}

// fakeGetent writes a getent stand-in that behaves as script says; the real
// getent cannot be made to fail or hang on demand.
func fakeGetent(t *testing.T, script string) NSS {
	p := filepath.Join(t.TempDir(), "getent")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return NSS{Getent: p}
}

// TestNSSFailsClosed: a database that errs, hangs or answers garbage is
// ErrUnavailable, never a user and never "not found".
func TestNSSFailsClosed(t *testing.T) {
	for name, script := range map[string]string{
		"exit 1":       "echo broken >&2; exit 1",
		"hang":         "exec sleep 30",
		"garbage":      "echo 'alice:x:notanumber:1'",
		"another user": "echo 'mallory:x:1001:1001::/home/mallory:/bin/sh'",
		"empty answer": "exit 0",
		"killed":       "kill -9 $$",
	} {
		t.Run(name, func(t *testing.T) {
			r := New(fakeGetent(t, script))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			u, err := r.LookupName(ctx, "alice")
			if !errors.Is(err, ErrUnavailable) || u.Name != "" {
				t.Fatalf("got %+v, %v; want ErrUnavailable and no user", u, err)
			}
		})
	}
}

type counting struct {
	Source
	calls atomic.Int32
}

func (c *counting) UserByName(ctx context.Context, name string) (User, error) {
	c.calls.Add(1)
	return c.Source.UserByName(ctx, name)
}

func TestCache(t *testing.T) {
	me := self(t)
	src := &counting{Source: NSS{}}
	r := New(src)
	now := time.Now()
	r.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if _, err := r.LookupName(ctx, me.Username); err != nil {
			t.Fatal(err)
		}
		_, _ = r.LookupName(ctx, "no-such-user-agor")
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d lookups, want 2 (one each, then cached)", n)
	}
	now = now.Add(NegativeTTL + time.Millisecond)
	_, _ = r.LookupName(ctx, me.Username)
	_, _ = r.LookupName(ctx, "no-such-user-agor")
	if n := src.calls.Load(); n != 3 {
		t.Fatalf("%d lookups, want 3 (the negative answer expired first)", n)
	}
	now = now.Add(PositiveTTL)
	_, _ = r.LookupName(ctx, me.Username)
	if n := src.calls.Load(); n != 4 {
		t.Fatalf("%d lookups, want 4 (the positive answer expired too)", n)
	}
}

// TestErrorsNotCached: a failing database is asked again next time.
func TestErrorsNotCached(t *testing.T) {
	src := &counting{Source: fakeGetent(t, "exit 1")}
	r := New(src)
	for range 3 {
		_, _ = r.LookupName(context.Background(), "alice")
	}
	if n := src.calls.Load(); n != 3 {
		t.Fatalf("%d lookups, want 3", n)
	}
}

// BenchmarkLookup prints name→uid and uid→name, cold (cache dropped every
// time) and cached, for the account in $AGOR_BENCH_USER (the suite sets a
// directory user) or the one running the benchmark, through the source
// Detect picks or $AGOR_BENCH_SOURCE (userdb or nss).
func BenchmarkLookup(b *testing.B) {
	name := os.Getenv("AGOR_BENCH_USER")
	if name == "" {
		name = self(b).Username
	}
	ctx := context.Background()
	src := Detect()
	switch os.Getenv("AGOR_BENCH_SOURCE") {
	case "userdb":
		src = Userdb{}
	case "nss":
		src = NSS{}
	}
	r := New(src)
	u, err := r.LookupName(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("source %s, user %s (uid %d)", r.Source(), u.Name, u.UID)
	for _, c := range []struct {
		name string
		cold bool
		f    func() error
	}{
		{"name-cold", true, func() error { _, err := r.LookupName(ctx, name); return err }},
		{"uid-cold", true, func() error { _, err := r.LookupUID(ctx, u.UID); return err }},
		{"name-cached", false, func() error { _, err := r.LookupName(ctx, name); return err }},
		{"uid-cached", false, func() error { _, err := r.LookupUID(ctx, u.UID); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if c.cold {
					r.mu.Lock()
					clear(r.cache)
					r.mu.Unlock()
				}
				if err := c.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestTable(t *testing.T) {
	tab := Table{
		Users:   []User{{Name: "ada.lovelace", UID: 20001, GID: 20001}},
		Groups:  []Group{{Name: "ldapagents", GID: 30000}, {Name: "other", GID: 30001}},
		Members: map[string][]string{"ldapagents": {"ada.lovelace"}},
		Errors:  map[string]error{"flaky": ErrUnavailable},
	}
	r, ctx := New(tab), context.Background()
	u, err := r.LookupUID(ctx, 20001)
	if err != nil || u.Name != "ada.lovelace" {
		t.Fatalf("LookupUID = %+v, %v", u, err)
	}
	if in, err := r.InGroup(ctx, u, "ldapagents"); !in || err != nil {
		t.Fatalf("InGroup(ldapagents) = %v, %v", in, err)
	}
	if in, _ := r.InGroup(ctx, u, "other"); in {
		t.Fatal("in a group that does not name her")
	}
	if _, err := r.LookupName(ctx, "flaky"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("flaky: %v", err)
	}
}
