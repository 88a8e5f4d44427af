// Package credstore keeps API keys encrypted at rest (AES-256-GCM) under a
// master key that systemd hands the daemon as a credential. A key is
// stored for one account (user name and uid) or daemon-wide; an
// account's own key wins. A key stored for an earlier account of the
// same name (another uid) is never handed out.
package credstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agor-sh/agor/internal/identity"
)

// Errors callers tell apart.
var (
	ErrNotFound = errors.New("credential not found")
	ErrCorrupt  = errors.New("credential cannot be decrypted (tampered, or another master key)")
)

// KeySize is the master key's length: AES-256.
const KeySize = 32

// LoadMasterKey reads the master key credential name from
// $CREDENTIALS_DIRECTORY (LoadCredential= or LoadCredentialEncrypted=):
// 32 raw bytes, or their standard base64 form.
func LoadMasterKey(name string) ([]byte, error) {
	dir := os.Getenv("CREDENTIALS_DIRECTORY")
	if dir == "" {
		return nil, fmt.Errorf("master key: CREDENTIALS_DIRECTORY is not set (run under the packaged unit, which has LoadCredential=%s)", name)
	}
	return ReadMasterKey(filepath.Join(dir, name))
}

// ReadMasterKey reads a master key file.
func ReadMasterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if len(b) == KeySize {
		return b, nil
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("master key %s: want %d bytes or their base64, got %d bytes", path, KeySize, len(b))
}

// GenerateMasterKey writes a new random key to path (mode 0600), failing
// if the file exists: a key is made once, on first install.
func GenerateMasterKey(path string) error {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}
	if _, err := f.Write([]byte(base64.StdEncoding.EncodeToString(k) + "\n")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var credName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidName accepts environment-variable style names (ANTHROPIC_API_KEY).
func ValidName(name string) error {
	if !credName.MatchString(name) {
		return fmt.Errorf("credential name %q: want an upper-case environment variable name", name)
	}
	return nil
}

// Store is a directory of sealed credentials: one file per owner, so
// that setting one person's key rewrites only that person's file.
type Store struct {
	dir  string
	aead cipher.AEAD

	mu    sync.Mutex
	items map[string]string // slot -> base64(nonce || ciphertext)
}

// Owner is whose slot a key is in: an account, or daemon-wide (Daemon).
type Owner struct {
	Name string // "" : daemon-wide
	UID  int64  // the account's uid; NoUID for keys whose account is not known
}

// Daemon is the daemon-wide owner.
var Daemon = Owner{}

// NoUID is the uid of keys stored before uids were recorded whose
// account was gone when they were adopted: nobody's.
const NoUID = identity.NoUID

// User is the owner of account name with uid.
func User(name string, uid uint32) Owner { return Owner{Name: name, UID: int64(uid)} }

// Open loads (or starts) the store in directory dir under master key
// key. Import brings in the previous version's single file.
func Open(dir string, key []byte) (*Store, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	s := &Store{dir: dir, aead: aead, items: map[string]string{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	for _, f := range files {
		if err := s.load(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// load merges one file's slots (each slot names its owner, whatever the
// file is called).
func (s *Store) load(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("credstore: %w", err)
	}
	var items map[string]string
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("credstore %s: %w", path, err)
	}
	for sl, v := range items {
		if _, have := s.items[sl]; !have {
			s.items[sl] = v
		}
	}
	return nil
}

// slot names where a credential lives: "USER:UID/NAME" for an account,
// "/NAME" daemon-wide ("USER/NAME" is a key of the previous version, not
// yet adopted). A user name holds neither '/' nor ':'. The slot is also
// the ciphertext's associated data, so a sealed value moved to another
// account's slot (another name, or another uid) no longer decrypts.
func slot(o Owner, name string) string {
	if o.Name == "" {
		return "/" + name
	}
	return o.Name + ":" + strconv.FormatInt(o.UID, 10) + "/" + name
}

// legacySlot is where the previous version kept name's key of user.
func legacySlot(user, name string) string { return user + "/" + name }

// parseSlot splits a slot; legacy reports a previous version's.
func parseSlot(sl string) (o Owner, name string, legacy bool, ok bool) {
	i := strings.LastIndexByte(sl, '/')
	if i < 0 {
		return Owner{}, "", false, false
	}
	who, name := sl[:i], sl[i+1:]
	if who == "" {
		return Daemon, name, false, true
	}
	user, uid, found := strings.Cut(who, ":")
	if !found {
		return Owner{Name: who, UID: NoUID}, name, true, true
	}
	n, err := strconv.ParseInt(uid, 10, 64)
	if err != nil || n < NoUID {
		return Owner{}, "", false, false
	}
	return Owner{Name: user, UID: n}, name, false, true
}

// Set seals value for o and saves.
func (s *Store) Set(o Owner, name, value string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.sealLocked(slot(o, name), value); err != nil {
		return err
	}
	return s.saveLocked(slot(o, name))
}

func (s *Store) sealLocked(sl, value string) error {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := s.aead.Seal(nonce, nonce, []byte(value), []byte(sl))
	s.items[sl] = base64.StdEncoding.EncodeToString(sealed)
	return nil
}

// Delete removes o's credential name.
func (s *Store) Delete(o Owner, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[slot(o, name)]; !ok {
		return ErrNotFound
	}
	delete(s.items, slot(o, name))
	return s.saveLocked(slot(o, name))
}

// Key is what Get found.
type Key struct {
	Value string
	Scope string // "user" (the account's own) or "daemon"
	// Stale lists the uids of other accounts of the same name that hold
	// a key of this name (earlier accounts, or NoUID): never handed out,
	// for the caller to audit.
	Stale []int64
}

// Get returns o's own value for name, else the daemon-wide one. A key of
// an earlier account of o's name is not o's: it is only reported, in
// Stale (with the daemon-wide value, or with ErrNotFound).
func (s *Store) Get(o Owner, name string) (Key, error) {
	if o.Name != "" {
		v, err := s.open(slot(o, name))
		if !errors.Is(err, ErrNotFound) {
			return Key{Value: v, Scope: "user"}, err
		}
	}
	k := Key{Scope: "daemon", Stale: s.stale(o, name)}
	var err error
	k.Value, err = s.open(slot(Daemon, name))
	return k, err
}

// stale lists the uids of o's name's other keys named name.
func (s *Store) stale(o Owner, name string) []int64 {
	if o.Name == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for sl := range s.items {
		if so, n, _, ok := parseSlot(sl); ok && so.Name == o.Name && n == name && so.UID != o.UID {
			out = append(out, so.UID)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Store) open(sl string) (string, error) {
	s.mu.Lock()
	enc, ok := s.items[sl]
	s.mu.Unlock()
	if !ok {
		return "", ErrNotFound
	}
	return s.unseal(sl, enc)
}

func (s *Store) unseal(sl, enc string) (string, error) {
	sealed, err := base64.StdEncoding.DecodeString(enc)
	ns := s.aead.NonceSize()
	if err != nil || len(sealed) < ns {
		return "", ErrCorrupt
	}
	plain, err := s.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(sl))
	if err != nil {
		return "", ErrCorrupt
	}
	return string(plain), nil
}
