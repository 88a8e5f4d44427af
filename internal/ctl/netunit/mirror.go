package netunit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Mirror gives the units with prefix (an environment's,
// agor-env-NAME@USER.service) exactly the network drop-ins the host's
// executor units have: the template's and each person's. A person's
// network mode is hers wherever her executor runs, and the daemon refuses
// an environment's executor whose unit does not enforce it, as it does
// the host's. It reports whether anything changed.
func Mirror(unitDir, prefix string) (bool, error) {
	users, err := Existing(unitDir)
	if err != nil {
		return false, err
	}
	stale, err := existingOf(unitDir, prefix)
	if err != nil {
		return false, err
	}
	changed := false
	for _, u := range append([]string{""}, append(users, stale...)...) {
		content, err := os.ReadFile(filepath.Join(Dir(unitDir, u), FileName))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changed, err
		}
		c, err := put(dirOf(unitDir, prefix, u), string(content))
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

// EnvPrefixes are the environments' unit prefixes with a template in
// unitDir (agor-env-NAME@.service).
func EnvPrefixes(unitDir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(unitDir, "agor-env-*@.service"))
	out := make([]string, 0, len(m))
	for _, f := range m {
		out = append(out, filepath.Base(f[:len(f)-len("@.service")]))
	}
	return out, err
}
