// Package envdef reads and writes environment definitions: a root tree
// or disk image an operator names, that a person's executor may run in
// (under the same User=, with her home bound in), and who may use it.
// The daemon, the executor and agorctl all read the same root-owned file,
// /etc/agor/environments/NAME.yaml.
package envdef

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultDir holds the definitions. It lies under /etc/agor, which every
// environment's executor has bound read-only, so the executor can check
// its own account against the definition it runs under.
const DefaultDir = "/etc/agor/environments"

// StateDir is where a tarball's tree is unpacked (DIR/NAME/root).
const StateDir = "/var/lib/agor/environments"

// maxFileSize bounds a definition file: a few lists of names and paths.
const maxFileSize = 64 << 10

// Agent CLIs from the host or from the image.
const (
	AgentsHost  = "host"
	AgentsImage = "image"
)

// Errors callers tell apart.
var (
	ErrInvalidName = errors.New("invalid environment name")
	ErrNotFound    = errors.New("no such environment")
	ErrInvalid     = errors.New("invalid environment definition")
)

// nameRE: lower-case letters, digits and '-', a letter or digit first. A
// name becomes part of unit names (agor-env-NAME@USER) and socket paths,
// so it needs no escaping anywhere; 32 bytes keeps the socket path short.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Host is what a request names to run on the host when a default
// environment is configured; no environment may be called so.
const Host = "host"

// ValidName refuses a name that could not be used as is in a unit name
// and a path, and the reserved Host.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w %q: want [a-z0-9][a-z0-9-]*, at most 32 bytes", ErrInvalidName, name)
	}
	if name == Host {
		return fmt.Errorf("%w %q: reserved for the host", ErrInvalidName, name)
	}
	return nil
}

// Definition is one environment.
type Definition struct {
	Name string `yaml:"name"`
	// Root is a directory tree; Image a disk image (RootImage=). One of
	// the two is set.
	Root  string `yaml:"root,omitempty"`
	Image string `yaml:"image,omitempty"`
	// Agents: "host" binds the host's /usr/local and /opt (where agent
	// CLIs are installed) read-only; "image" uses the image's own.
	Agents string `yaml:"agents"`
	// Users and Groups may use it; both empty: nobody (an environment is
	// opened deliberately, never by default).
	Users  []string `yaml:"users,omitempty"`
	Groups []string `yaml:"groups,omitempty"`
	// Bind are host paths bound read-write at the same place inside
	// (besides /home); BindReadOnly read-only.
	Bind         []string `yaml:"bind,omitempty"`
	BindReadOnly []string `yaml:"bind_read_only,omitempty"`
}

// Validate checks d as a whole.
func (d Definition) Validate() error {
	if err := ValidName(d.Name); err != nil {
		return err
	}
	if (d.Root == "") == (d.Image == "") {
		return fmt.Errorf("%w %s: exactly one of root and image", ErrInvalid, d.Name)
	}
	if d.Agents != AgentsHost && d.Agents != AgentsImage {
		return fmt.Errorf("%w %s: agents is %q, want host or image", ErrInvalid, d.Name, d.Agents)
	}
	for _, p := range slices.Concat([]string{d.Root + d.Image}, d.Bind, d.BindReadOnly) {
		if err := checkPath(p); err != nil {
			return fmt.Errorf("%w %s: %v", ErrInvalid, d.Name, err)
		}
	}
	return nil
}

// checkPath: an absolute, clean path with nothing systemd would read as
// a separator or a prefix ("-", "+", ':' in BindPaths=).
func checkPath(p string) error {
	switch {
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("path %q is not absolute and clean", p)
	case p == "/":
		return errors.New("path / cannot be bound")
	case strings.ContainsAny(p, " \t\n:\\%\"'"):
		return fmt.Errorf("path %q has a space, quote, ':', '\\' or '%%'", p)
	}
	return nil
}

// Permits says whether user (with inGroup telling group membership) may
// use d.
func (d Definition) Permits(user string, inGroup func(groups ...string) (bool, error)) (bool, error) {
	if slices.Contains(d.Users, user) {
		return true, nil
	}
	if len(d.Groups) == 0 {
		return false, nil
	}
	return inGroup(d.Groups...)
}

// Path is name's definition file in dir.
func Path(dir, name string) string { return filepath.Join(dir, name+".yaml") }

// Load reads name's definition from dir.
func Load(dir, name string) (Definition, error) {
	if err := ValidName(name); err != nil {
		return Definition{}, err
	}
	f, err := os.Open(Path(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return Definition{}, fmt.Errorf("%w: %q (no %s)", ErrNotFound, name, Path(dir, name))
	}
	if err != nil {
		return Definition{}, err
	}
	defer f.Close()
	return parse(io.LimitReader(f, maxFileSize+1), name)
}

func parse(r io.Reader, name string) (Definition, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Definition{}, err
	}
	if len(data) > maxFileSize {
		return Definition{}, fmt.Errorf("%w %s: larger than %d bytes", ErrInvalid, name, maxFileSize)
	}
	var d Definition
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return Definition{}, fmt.Errorf("%w %s: %v", ErrInvalid, name, err)
	}
	if d.Name != name {
		return Definition{}, fmt.Errorf("%w %s: the file names %q", ErrInvalid, name, d.Name)
	}
	return d, d.Validate()
}

// List reads every definition in dir, by name; a missing dir is none.
func List(dir string) ([]Definition, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []Definition
	for _, n := range names {
		d, err := Load(dir, strings.TrimSuffix(filepath.Base(n), ".yaml"))
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Save writes d to dir atomically, root-readable by all (the daemon and
// the executors read it) and writable by its owner only.
func Save(dir string, d Definition) error {
	if err := d.Validate(); err != nil {
		return err
	}
	data, err := yaml.Marshal(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := Path(dir, d.Name) + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, Path(dir, d.Name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
