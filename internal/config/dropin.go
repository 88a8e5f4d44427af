package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Drop-ins, the systemd way: /etc/agor/config.d/*.yaml, read after
// config.yaml in lexical order, each merged over what came before
// (mappings key by key, scalars and lists replaced). An operator's change
// kept in a drop-in survives package upgrades without dpkg's conffile
// question, since config.yaml itself stays as packaged.

// MaxDropIns bounds how many drop-ins Load reads.
const MaxDropIns = 256

// DropInDir is the drop-in directory beside the file at path.
func DropInDir(path string) string { return filepath.Join(filepath.Dir(path), "config.d") }

// DropIns lists the drop-ins Load reads after path, in the order it reads
// them: DropInDir's *.yaml files, hidden ones and directories left out.
// No directory is none.
func DropIns(path string) ([]string, error) {
	dir := DropInDir(path)
	entries, err := os.ReadDir(dir) // sorted by name
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".yaml") {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	if len(out) > MaxDropIns {
		return nil, fmt.Errorf("config: %s: %d drop-ins, more than %d", dir, len(out), MaxDropIns)
	}
	return out, nil
}

// Load reads path, then its drop-ins over it; a missing file means all
// defaults (with the drop-ins over them). Each file is checked on its
// own (unknown keys and bad types are errors naming it), the merged
// result is validated.
func Load(path string) (Config, error) {
	drops, err := DropIns(path)
	if err != nil {
		return Config{}, err
	}
	var merged *yaml.Node
	for i, p := range append([]string{path}, drops...) {
		n, err := loadNode(p, i == 0)
		if err != nil {
			return Config{}, err
		}
		merged = merge(merged, n)
	}
	c := Default()
	if merged != nil {
		if err := merged.Decode(&c); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, clean(err))
		}
	}
	if err := c.Validate(); err != nil {
		if len(drops) > 0 {
			return Config{}, fmt.Errorf("config %s with %s: %w", path, strings.Join(drops, ", "), err)
		}
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// loadNode reads one file, checks its keys and types alone, and returns
// its top node (nil: empty, or a missing config.yaml when optional).
func loadNode(path string, optional bool) (*yaml.Node, error) {
	f, err := os.Open(path)
	if optional && errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	n, err := checkNode(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return n, nil
}

// checkNode decodes data strictly over the defaults (the keys and types
// it names, not yet the values' sense) and returns its top node.
func checkNode(data []byte) (*yaml.Node, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, clean(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, clean(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// merge lays over on base: two mappings merge key by key, and otherwise
// over replaces base (scalars, lists), except that an empty value
// ("gateway:" alone) over a mapping leaves it as it was.
func merge(base, over *yaml.Node) *yaml.Node {
	switch {
	case base == nil:
		return over
	case over == nil:
		return base
	case base.Kind == yaml.MappingNode && isNull(over):
		return base
	case base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode:
		return over
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		if j := keyAt(base, k.Value); j >= 0 {
			base.Content[j+1] = merge(base.Content[j+1], v)
		} else {
			base.Content = append(base.Content, k, v)
		}
	}
	return base
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// keyAt is the index of key in mapping m's contents, -1 when absent.
func keyAt(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// Stamp tells what Load would read at path from what it read before:
// the file's and each drop-in's name, size and time, so that a changed,
// added or removed drop-in is a change too.
func Stamp(path string) string {
	var b strings.Builder
	files := []string{path}
	drops, err := DropIns(path)
	if err != nil {
		fmt.Fprintf(&b, "%v\n", err)
	}
	for _, p := range append(files, drops...) {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s absent\n", p)
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}
