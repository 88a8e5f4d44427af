// Package credstore keeps API keys encrypted at rest (AES-256-GCM) under a
// master key that systemd hands the daemon as a credential. A key is
// stored for one user or daemon-wide; a user's own key wins.
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
	"strings"
	"sync"
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

// Store is a file of sealed credentials.
type Store struct {
	path string
	aead cipher.AEAD

	mu    sync.Mutex
	items map[string]string // slot -> base64(nonce || ciphertext)
}

// Open loads (or starts) the store at path under master key key.
func Open(path string, key []byte) (*Store, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("credstore: %w", err)
	}
	s := &Store{path: path, aead: aead, items: map[string]string{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("credstore: %w", err)
	}
	if err := json.Unmarshal(b, &s.items); err != nil {
		return nil, fmt.Errorf("credstore %s: %w", path, err)
	}
	return s, nil
}

// slot names where a credential lives; user "" is daemon-wide. It is also
// the ciphertext's associated data, so a sealed value moved to another
// user's slot no longer decrypts.
func slot(user, name string) string { return user + "/" + name }

// Set seals value for user (or daemon-wide when user is "") and saves.
func (s *Store) Set(user, name, value string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := s.aead.Seal(nonce, nonce, []byte(value), []byte(slot(user, name)))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[slot(user, name)] = base64.StdEncoding.EncodeToString(sealed)
	return s.saveLocked()
}

// Delete removes a credential.
func (s *Store) Delete(user, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[slot(user, name)]; !ok {
		return ErrNotFound
	}
	delete(s.items, slot(user, name))
	return s.saveLocked()
}

// Get returns user's own value for name, else the daemon-wide one. scope
// says which was used ("user" or "daemon").
func (s *Store) Get(user, name string) (value, scope string, err error) {
	if user != "" {
		if v, err := s.open(user, name); !errors.Is(err, ErrNotFound) {
			return v, "user", err
		}
	}
	v, err := s.open("", name)
	return v, "daemon", err
}

func (s *Store) open(user, name string) (string, error) {
	s.mu.Lock()
	enc, ok := s.items[slot(user, name)]
	s.mu.Unlock()
	if !ok {
		return "", ErrNotFound
	}
	sealed, err := base64.StdEncoding.DecodeString(enc)
	ns := s.aead.NonceSize()
	if err != nil || len(sealed) < ns {
		return "", ErrCorrupt
	}
	plain, err := s.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(slot(user, name)))
	if err != nil {
		return "", ErrCorrupt
	}
	return string(plain), nil
}

// saveLocked writes the file atomically (temp file, fsync, rename).
func (s *Store) saveLocked() error {
	b, err := json.Marshal(s.items)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".credstore-*")
	if err != nil {
		return fmt.Errorf("credstore: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		return fmt.Errorf("credstore: save: %w", err)
	}
	return nil
}
