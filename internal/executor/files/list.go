package files

import (
	"context"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

func (s *Service) list(ctx context.Context, p protocol.ListFilesParams) (protocol.ListFilesResult, error) {
	rel, err := s.root.Rel(p.Path)
	if err != nil {
		return protocol.ListFilesResult{}, fileErr(err)
	}
	max := p.Max
	if max == 0 {
		max = protocol.DefaultListMax
	}
	res := protocol.ListFilesResult{Entries: []protocol.FileEntry{}}
	err = s.walk(ctx, path.Clean(rel), p, max, &res)
	return res, err
}

// walk lists dir; every directory it descends into is opened beneath the
// root again, so a symlink swapped in mid-walk cannot lead out.
func (s *Service) walk(ctx context.Context, dir string, p protocol.ListFilesParams, max int, res *protocol.ListFilesResult) error {
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

func entry(rel string, de fs.DirEntry) protocol.FileEntry {
	e := protocol.FileEntry{Path: rel, Type: "other"}
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
