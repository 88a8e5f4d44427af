package files

import (
	"context"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/agor-sh/agor/internal/rpc"
)

// Listing bounds.
const (
	DefaultListMax = 1000
	MaxListMax     = 100_000
)

// ListParams lists a directory, optionally recursively and filtered by a
// glob (matched against the name, or the relative path if it has a '/').
type ListParams struct {
	Path      string `json:"path"`
	Pattern   string `json:"pattern,omitempty"`
	Recursive bool   `json:"recursive"`
	Max       int    `json:"max,omitempty"`
}

// Validate checks the fields.
func (p ListParams) Validate() error {
	if p.Max < 0 || p.Max > MaxListMax {
		return rpc.InvalidParams("max", "must be between 0 and 100000")
	}
	if _, err := path.Match(p.Pattern, ""); err != nil {
		return rpc.InvalidParams("pattern", err.Error())
	}
	return nil
}

// Entry is one listed file; Path is relative to the root.
type Entry struct {
	Path    string `json:"path"`
	Type    string `json:"type"` // file, dir, symlink or other
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	MtimeMS int64  `json:"mtime_ms"`
}

// ListResult says whether Max cut the listing short.
type ListResult struct {
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

func (s *Service) list(ctx context.Context, p ListParams) (ListResult, error) {
	rel, err := s.root.Rel(p.Path)
	if err != nil {
		return ListResult{}, fileErr(err)
	}
	max := p.Max
	if max == 0 {
		max = DefaultListMax
	}
	res := ListResult{Entries: []Entry{}}
	err = s.walk(ctx, path.Clean(rel), p, max, &res)
	return res, err
}

// walk lists dir; every directory it descends into is opened beneath the
// root again, so a symlink swapped in mid-walk cannot lead out.
func (s *Service) walk(ctx context.Context, dir string, p ListParams, max int, res *ListResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := s.root.OpenDir(dir)
	if err != nil {
		return fileErr(err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fileErr(err)
	}
	for _, de := range ents {
		rel := path.Join(dir, de.Name())
		if matches(p.Pattern, rel, de.Name()) {
			if len(res.Entries) >= max {
				res.Truncated = true
				return nil
			}
			res.Entries = append(res.Entries, entry(rel, de))
		}
		if p.Recursive && de.IsDir() {
			if err := s.walk(ctx, rel, p, max, res); err != nil || res.Truncated {
				return err
			}
		}
	}
	return nil
}

func matches(pattern, rel, name string) bool {
	if pattern == "" {
		return true
	}
	target := name
	if strings.Contains(pattern, "/") {
		target = rel
	}
	ok, _ := filepath.Match(pattern, target)
	return ok
}

func entry(rel string, de fs.DirEntry) Entry {
	e := Entry{Path: rel, Type: "other"}
	switch {
	case de.Type()&fs.ModeSymlink != 0:
		e.Type = "symlink"
	case de.IsDir():
		e.Type = "dir"
	case de.Type().IsRegular():
		e.Type = "file"
	}
	if fi, err := de.Info(); err == nil {
		e.Size, e.Mode, e.MtimeMS = fi.Size(), uint32(fi.Mode().Perm()), fi.ModTime().UnixMilli()
	}
	return e
}
