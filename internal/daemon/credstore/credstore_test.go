package credstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

var (
	alice = User("alice", 1000)
	bob   = User("bob", 1001)
)

func open(t *testing.T, path string, k []byte) *Store {
	t.Helper()
	s, err := Open(path, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSetGetFallbackAndPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds.json")
	s := open(t, path, key(1))
	must(t, s.Set(Daemon, "ANTHROPIC_API_KEY", "sk-daemon"))
	must(t, s.Set(alice, "ANTHROPIC_API_KEY", "sk-alice"))

	s = open(t, path, key(1)) // read back from disk
	tests := []struct {
		o            Owner
		value, scope string
	}{
		{alice, "sk-alice", "user"},
		{bob, "sk-daemon", "daemon"},
		{Daemon, "sk-daemon", "daemon"},
	}
	for _, tc := range tests {
		k, err := s.Get(tc.o, "ANTHROPIC_API_KEY")
		if err != nil || k.Value != tc.value || k.Scope != tc.scope || k.Stale != nil {
			t.Errorf("Get(%v) = %+v %v; want %q %q", tc.o, k, err, tc.value, tc.scope)
		}
	}
	if _, err := s.Get(alice, "OPENAI_API_KEY"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(path, "*"))
	if len(files) != 2 {
		t.Fatalf("files %v, want one per owner", files)
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), "sk-alice") || strings.Contains(string(raw), "sk-daemon") {
			t.Fatalf("plaintext in the store file: %s", raw)
		}
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Fatalf("store file mode %v, want 0600", fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o700 {
		t.Fatalf("store directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// TestSetRewritesOnlyTheOwnersFile: bob's key written does not touch
// alice's file (a PUT costs one person's file, not everyone's).
func TestSetRewritesOnlyTheOwnersFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "credentials")
	s := open(t, dir, key(1))
	must(t, s.Set(alice, "ANTHROPIC_API_KEY", "sk-alice"))
	aliceFile := filepath.Join(dir, "1000-alice.json")
	before, err := os.Stat(aliceFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		must(t, s.Set(bob, "ANTHROPIC_API_KEY", strings.Repeat("b", i+1)))
	}
	after, _ := os.Stat(aliceFile)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("alice's file was rewritten by bob's writes")
	}
	must(t, s.Delete(bob, "ANTHROPIC_API_KEY"))
	if _, err := os.Stat(filepath.Join(dir, "1001-bob.json")); !os.IsNotExist(err) {
		t.Fatalf("bob's empty file left: %v", err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds.json")
	s := open(t, path, key(1))
	must(t, s.Set(alice, "GEMINI_API_KEY", "alice-secret"))
	must(t, s.Set(bob, "GEMINI_API_KEY", "bob-secret"))

	edit := func(f func(map[string]string)) *Store { // all slots, then written back as alice's file
		items := map[string]string{}
		files, _ := filepath.Glob(filepath.Join(path, "*.json"))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			_ = json.Unmarshal(b, &items)
		}
		f(items)
		b, _ := json.Marshal(items)
		_ = os.WriteFile(filepath.Join(path, "1000-alice.json"), b, 0o600)
		return open(t, path, key(1))
	}
	t.Run("flipped bit", func(t *testing.T) {
		s := edit(func(m map[string]string) {
			c, _ := base64.StdEncoding.DecodeString(m["alice:1000/GEMINI_API_KEY"])
			c[len(c)-1] ^= 1
			m["alice:1000/GEMINI_API_KEY"] = base64.StdEncoding.EncodeToString(c)
		})
		if _, err := s.Get(alice, "GEMINI_API_KEY"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("tampered ciphertext: %v", err)
		}
	})
	t.Run("moved to another user", func(t *testing.T) {
		s := edit(func(m map[string]string) { m["alice:1000/GEMINI_API_KEY"] = m["bob:1001/GEMINI_API_KEY"] })
		if k, err := s.Get(alice, "GEMINI_API_KEY"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bob's sealed key in alice's slot gave %q, %v", k.Value, err)
		}
	})
	t.Run("moved to another uid", func(t *testing.T) {
		s := edit(func(m map[string]string) { m["alice:2000/GEMINI_API_KEY"] = m["alice:1000/GEMINI_API_KEY"] })
		if k, err := s.Get(User("alice", 2000), "GEMINI_API_KEY"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("uid 1000's sealed key in uid 2000's slot gave %q, %v", k.Value, err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		s := edit(func(m map[string]string) { m["bob:1001/GEMINI_API_KEY"] = "AAAA" })
		if _, err := s.Get(bob, "GEMINI_API_KEY"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated: %v", err)
		}
	})
	t.Run("other master key", func(t *testing.T) {
		other := open(t, path, key(2))
		if _, err := other.Get(Daemon, "GEMINI_API_KEY"); err == nil {
			t.Fatal("decrypted with the wrong master key")
		}
		if _, err := other.Get(bob, "GEMINI_API_KEY"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("wrong master key: %v", err)
		}
	})
}

func TestMasterKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master-key")
	must(t, GenerateMasterKey(path))
	if err := GenerateMasterKey(path); err == nil {
		t.Fatal("GenerateMasterKey overwrote an existing key")
	}
	t.Setenv("CREDENTIALS_DIRECTORY", dir)
	k, err := LoadMasterKey("master-key")
	if err != nil || len(k) != KeySize {
		t.Fatalf("LoadMasterKey = %d bytes, %v", len(k), err)
	}
	raw := filepath.Join(dir, "raw")
	must(t, os.WriteFile(raw, key(7), 0o600))
	if k, err := ReadMasterKey(raw); err != nil || !bytes.Equal(k, key(7)) {
		t.Fatalf("raw key: %v", err)
	}
	short := filepath.Join(dir, "short")
	must(t, os.WriteFile(short, []byte("too short"), 0o600))
	if _, err := ReadMasterKey(short); err == nil || !strings.Contains(err.Error(), "want 32 bytes") {
		t.Fatalf("short key: %v", err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	if _, err := LoadMasterKey("master-key"); err == nil || !strings.Contains(err.Error(), "LoadCredential") {
		t.Fatalf("no credentials directory: %v", err)
	}
}

func TestNames(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "c.json"), key(1))
	for _, bad := range []string{"", "lower", "../X", "A B", strings.Repeat("A", 65)} {
		if err := s.Set(alice, bad, "v"); err == nil {
			t.Errorf("Set accepted name %q", bad)
		}
	}
	if err := s.Delete(alice, "NOPE"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of missing: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
