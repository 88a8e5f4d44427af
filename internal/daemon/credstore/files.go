package credstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// fileOf is the file that holds slot sl: daemon.json for daemon-wide
// keys, UID-NAME.json for an account's (uid first: a user name never
// starts with a digit's sign, and holds no '/'), legacy-NAME.json for the
// previous version's keys not yet adopted.
func fileOf(sl string) string {
	o, _, legacy, ok := parseSlot(sl)
	switch {
	case !ok:
		return "unparsed.json" // never from Set; kept as it was found
	case o.Name == "":
		return "daemon.json"
	case legacy:
		return "legacy-" + o.Name + ".json"
	}
	return strconv.FormatInt(o.UID, 10) + "-" + o.Name + ".json"
}

// saveLocked rewrites the files that hold slots (and only those): each
// atomically (temp file, fsync, rename), then the directory is synced so
// the renames survive a crash. A file left with no key is removed.
func (s *Store) saveLocked(slots ...string) error {
	files := map[string]map[string]string{}
	for _, sl := range slots {
		files[fileOf(sl)] = map[string]string{}
	}
	for sl, v := range s.items {
		if m, ok := files[fileOf(sl)]; ok {
			m[sl] = v
		}
	}
	for name, items := range files {
		if err := s.writeFile(name, items); err != nil {
			return fmt.Errorf("credstore: save: %w", err)
		}
	}
	return syncDir(s.dir)
}

func (s *Store) writeFile(name string, items map[string]string) error {
	path := filepath.Join(s.dir, name)
	if len(items) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".credstore-*")
	if err != nil {
		return err
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
		err = os.Rename(tmp.Name(), path)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("credstore: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("credstore: sync %s: %w", dir, err)
	}
	return nil
}

// Import moves the previous version's single file (credentials.json, all
// owners in one map) into the per-owner files, and returns how many keys
// it held. The old file is removed only once every key is durably in its
// new file; a crash before that imports again at the next start (a key
// already in the directory wins: it was set later). No file: nothing to do.
func (s *Store) Import(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("credstore: import: %w", err)
	}
	var items map[string]string
	if err := json.Unmarshal(b, &items); err != nil {
		return 0, fmt.Errorf("credstore: import %s: %w", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slots := make([]string, 0, len(items))
	for sl, v := range items {
		if _, have := s.items[sl]; !have {
			s.items[sl] = v
		}
		slots = append(slots, sl)
	}
	if err := s.saveLocked(slots...); err != nil {
		return 0, err
	}
	if err := os.Remove(path); err != nil {
		return 0, fmt.Errorf("credstore: import: %w", err)
	}
	return len(items), syncDir(filepath.Dir(path))
}
