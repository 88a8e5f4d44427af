package credstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/identity"
)

// previousVersion writes a credentials file as the previous version
// did: keys in "USER/NAME" slots sealed with that slot, and a
// daemon-wide one.
func previousVersion(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials.json")
	s := open(t, path, key(1))
	s.mu.Lock()
	for _, u := range []string{"alice", "bob", "carol"} {
		must(t, s.sealLocked(legacySlot(u, "ANTHROPIC_API_KEY"), "sk-"+u))
	}
	must(t, s.sealLocked("/OPENAI_API_KEY", "sk-daemon"))
	must(t, s.saveLocked())
	s.mu.Unlock()
	return path
}

// TestUpgradeAdoptsKeys: alice's key becomes her account's; bob (gone
// at the upgrade) keeps his only as an orphan, which a later bob does
// not get; carol's waits while her directory does not answer.
func TestUpgradeAdoptsKeys(t *testing.T) {
	path := previousVersion(t)
	s := open(t, path, key(1))
	ldap := errors.Join(identity.ErrUnavailable, errors.New("ldap down"))
	dir := identity.Users(map[string]uint32{"alice": 1000})
	dir.Errors = map[string]error{"carol": ldap} // its directory does not answer
	a, err := s.Adopt(context.Background(), identity.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint32{"alice": 1000}, a.Adopted); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bob"}, a.Orphaned); diff != "" {
		t.Errorf("orphaned (-want +got):\n%s", diff)
	}
	if _, ok := a.Pending["carol"]; !ok {
		t.Errorf("pending = %v, want carol", a.Pending)
	}

	s = open(t, path, key(1)) // the adoption is saved
	if k, err := s.Get(alice, "ANTHROPIC_API_KEY"); err != nil || k.Value != "sk-alice" || k.Scope != "user" {
		t.Errorf("alice after adoption: %+v, %v", k, err)
	}
	newBob := User("bob", 2000)
	if k, err := s.Get(newBob, "ANTHROPIC_API_KEY"); !errors.Is(err, ErrNotFound) || k.Value != "" || !cmp.Equal(k.Stale, []int64{NoUID}) {
		t.Errorf("a new bob: %+v, %v; want not found, stale [-1]", k, err)
	}
	if _, err := s.Get(User("carol", 1002), "ANTHROPIC_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Errorf("carol's key is usable before adoption: %v", err)
	}
	if _, err := s.Adopt(context.Background(), identity.New(identity.Users(map[string]uint32{"bob": 2000, "carol": 1002}))); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Get(User("carol", 1002), "ANTHROPIC_API_KEY"); err != nil || k.Value != "sk-carol" {
		t.Errorf("carol after her directory answered: %+v, %v", k, err)
	}
	if _, err := s.Get(newBob, "ANTHROPIC_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a second adoption gave bob's old key to the new bob: %v", err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), `"alice/`) || strings.Contains(string(raw), "sk-") {
		t.Errorf("file after adoption: %s", raw)
	}
}

// TestAccountReuse: a key stored for alice uid 1000 is not handed to
// alice uid 2000; the daemon-wide one is, and the stale key is reported.
func TestAccountReuse(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "c.json"), key(1))
	must(t, s.Set(alice, "ANTHROPIC_API_KEY", "sk-old-alice"))
	newAlice := User("alice", 2000)
	k, err := s.Get(newAlice, "ANTHROPIC_API_KEY")
	if !errors.Is(err, ErrNotFound) || k.Value != "" || !cmp.Equal(k.Stale, []int64{1000}) {
		t.Fatalf("new alice, no daemon-wide key: %+v, %v", k, err)
	}
	must(t, s.Set(Daemon, "ANTHROPIC_API_KEY", "sk-daemon"))
	if k, err := s.Get(newAlice, "ANTHROPIC_API_KEY"); err != nil || k.Value != "sk-daemon" || k.Scope != "daemon" || !cmp.Equal(k.Stale, []int64{1000}) {
		t.Fatalf("new alice with a daemon-wide key: %+v, %v", k, err)
	}
	must(t, s.Set(newAlice, "ANTHROPIC_API_KEY", "sk-new-alice"))
	if k, err := s.Get(newAlice, "ANTHROPIC_API_KEY"); err != nil || k.Value != "sk-new-alice" {
		t.Fatalf("new alice's own key: %+v, %v", k, err)
	}
	if err := s.Delete(newAlice, "OPENAI_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete: %v", err)
	}

	want := []Held{
		{Owner: alice, Names: []string{"ANTHROPIC_API_KEY"}},
		{Owner: newAlice, Names: []string{"ANTHROPIC_API_KEY"}},
	}
	if diff := cmp.Diff(want, s.Owners()); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
	gone, err := s.Purge(alice)
	if err != nil || !cmp.Equal(gone, []string{"ANTHROPIC_API_KEY"}) {
		t.Fatalf("purge = %v, %v", gone, err)
	}
	if diff := cmp.Diff(want[1:], s.Owners()); diff != "" {
		t.Errorf("owners after purge (-want +got):\n%s", diff)
	}
	if k, err := s.Get(newAlice, "ANTHROPIC_API_KEY"); err != nil || k.Value != "sk-new-alice" || k.Stale != nil {
		t.Errorf("after purge: %+v, %v", k, err)
	}
	if _, err := s.Purge(Daemon); err == nil {
		t.Error("Purge(Daemon) accepted")
	}
}
