package credstore

import (
	"context"
	"encoding/json"
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
// The earlier file format (one file, every owner) is imported into the
// per-owner files, and the old file removed.
func previousVersion(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	s := open(t, filepath.Join(state, "scratch"), key(1))
	s.mu.Lock()
	for _, u := range []string{"alice", "bob", "carol"} {
		must(t, s.sealLocked(legacySlot(u, "ANTHROPIC_API_KEY"), "sk-"+u))
	}
	must(t, s.sealLocked("/OPENAI_API_KEY", "sk-daemon"))
	b, err := json.Marshal(s.items)
	s.mu.Unlock()
	must(t, err)
	legacy := filepath.Join(state, "credentials.json")
	must(t, os.WriteFile(legacy, b, 0o600))
	path := filepath.Join(state, "credentials")
	n, err := open(t, path, key(1)).Import(legacy)
	if err != nil || n != 4 {
		t.Fatalf("import: %d keys, %v", n, err)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the old file is still there: %v", err)
	}
	if k, err := open(t, path, key(1)).Get(Daemon, "OPENAI_API_KEY"); err != nil || k.Value != "sk-daemon" {
		t.Fatalf("daemon-wide key after import: %+v %v", k, err)
	}
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
	files, _ := filepath.Glob(filepath.Join(path, "*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), `"alice/`) || strings.Contains(string(raw), "sk-") {
			t.Errorf("%s after adoption: %s", f, raw)
		}
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

// TestImportAfterCrash: an import cut short (new files written, old file
// not yet removed) runs again; a key set since then is not overwritten;
// an unreadable old file is an error and stays where it is.
func TestImportAfterCrash(t *testing.T) {
	state := t.TempDir()
	legacy := filepath.Join(state, "credentials.json")
	dir := filepath.Join(state, "credentials")
	s := open(t, dir, key(1))
	must(t, s.Set(alice, "K", "old"))
	s.mu.Lock()
	b, _ := json.Marshal(s.items)
	s.mu.Unlock()
	must(t, os.WriteFile(legacy, b, 0o600))
	must(t, s.Set(alice, "K", "new")) // after the crash, before the restart
	s = open(t, dir, key(1))
	if _, err := s.Import(legacy); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Get(alice, "K"); err != nil || k.Value != "new" {
		t.Fatalf("after the second import: %+v %v", k, err)
	}
	must(t, os.WriteFile(legacy, []byte("{not json"), 0o600))
	if _, err := s.Import(legacy); err == nil {
		t.Fatal("a corrupt old file imported")
	}
	if _, err := os.Stat(legacy); err != nil {
		t.Fatalf("the corrupt old file was removed: %v", err)
	}
}
