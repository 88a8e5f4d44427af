package protocol

import (
	"fmt"
	"path"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Paths in file messages are relative to the executor's root (absolute
// ones must lie beneath it); the executor resolves them with openat2
// RESOLVE_BENEATH and refuses any that lead out (path_escape).

// ReadFileParams asks for up to Length bytes at Offset.
type ReadFileParams struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Length int    `json:"length"` // 0: as much as one chunk holds
}

// Validate checks the fields.
func (p ReadFileParams) Validate() error {
	switch {
	case p.Path == "":
		return rpc.InvalidParams("path", "required")
	case p.Offset < 0:
		return rpc.InvalidParams("offset", "must not be negative")
	case p.Length < 0:
		return rpc.InvalidParams("length", "must not be negative")
	}
	return nil
}

// ReadFileResult is one chunk; EOF says whether the file ends with it.
type ReadFileResult struct {
	Content []byte `json:"content"` // base64 on the wire
	Offset  int64  `json:"offset"`
	Size    int64  `json:"size"`
	EOF     bool   `json:"eof"`
	Mode    uint32 `json:"mode"`
}

// WriteFileParams writes Content at Offset of an atomic write of Path.
// With Final (the default) the file is complete and replaces the old one.
// Its mode is Mode, else that of the regular file it replaces, else 0666
// less the executor's umask; a symbolic link at Path is replaced by the
// file, never followed, and lends no mode.
type WriteFileParams struct {
	Path    string  `json:"path"`
	Content []byte  `json:"content"` // base64 on the wire
	Mode    *uint32 `json:"mode,omitempty"`
	Offset  int64   `json:"offset"`
	Final   *bool   `json:"final,omitempty"`
}

// Validate checks the fields.
func (p WriteFileParams) Validate() error {
	switch {
	case p.Path == "":
		return rpc.InvalidParams("path", "required")
	case p.Offset < 0:
		return rpc.InvalidParams("offset", "must not be negative")
	case p.Mode != nil && *p.Mode > 0o7777:
		return rpc.InvalidParams("mode", "must be a permission mode up to 07777")
	}
	return nil
}

// IsFinal reports whether this chunk completes the file.
func (p WriteFileParams) IsFinal() bool { return p.Final == nil || *p.Final }

// WriteFileResult reports the bytes written so far and whether the file
// was put in place.
type WriteFileResult struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Committed bool   `json:"committed"`
}

// WriteFilesParams writes several whole files, each atomically.
type WriteFilesParams struct {
	Files []WriteFileParams `json:"files"`
}

// Validate checks the fields.
func (p WriteFilesParams) Validate() error {
	if len(p.Files) == 0 {
		return rpc.InvalidParams("files", "required")
	}
	for i, f := range p.Files {
		if f.Offset != 0 || !f.IsFinal() {
			return rpc.InvalidParams(fmt.Sprintf("files[%d]", i), "write_files takes whole files; use write_file for chunks")
		}
		if err := f.Validate(); err != nil {
			return rpc.InvalidParams(fmt.Sprintf("files[%d]", i), err.Error())
		}
	}
	return nil
}

// FileResult is one file's outcome in write_files.
type FileResult struct {
	Path  string     `json:"path"`
	Size  int64      `json:"size,omitempty"`
	Error *rpc.Error `json:"error,omitempty"`
}

// WriteFilesResult has one result per file, in order.
type WriteFilesResult struct {
	Results []FileResult `json:"results"`
	Written int          `json:"written"`
}

// Bounds of list_files' max.
const (
	DefaultListMax = 1000
	MaxListMax     = 100_000
)

// ListFilesParams lists a directory, optionally recursively and filtered
// by a glob (matched against the name, or the relative path if it has a
// '/').
type ListFilesParams struct {
	Path      string `json:"path"`
	Pattern   string `json:"pattern,omitempty"`
	Recursive bool   `json:"recursive"`
	Max       int    `json:"max,omitempty"`
}

// Validate checks the fields.
func (p ListFilesParams) Validate() error {
	if p.Max < 0 || p.Max > MaxListMax {
		return rpc.InvalidParams("max", "must be between 0 and 100000")
	}
	if _, err := path.Match(p.Pattern, ""); err != nil {
		return rpc.InvalidParams("pattern", err.Error())
	}
	return nil
}

// File types in a listing.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// FileEntry is one listed file; Path is relative to the root.
type FileEntry struct {
	Path    string `json:"path"`
	Type    string `json:"type"` // file, dir, symlink or other
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	MtimeMS int64  `json:"mtime_ms"`
}

// ListFilesResult says whether Max cut the listing short.
type ListFilesResult struct {
	Entries   []FileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// WatchParams watches a file or directory.
type WatchParams struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// WatchResult names the new watch.
type WatchResult struct {
	WatchID string `json:"watch_id"`
}

// UnwatchParams names a watch to end.
type UnwatchParams struct {
	WatchID string `json:"watch_id"`
}

// Validate checks the fields.
func (p UnwatchParams) Validate() error {
	if p.WatchID == "" {
		return rpc.InvalidParams("watch_id", "required")
	}
	return nil
}

// UnwatchResult says the watch ended.
type UnwatchResult struct {
	Unwatched bool `json:"unwatched"`
}

// File event operations.
const (
	OpCreate   = "create"
	OpModify   = "modify"
	OpDelete   = "delete"
	OpRename   = "rename"
	OpOverflow = "overflow" // events were lost: list again
)

// FileEvent is one file_event notification; Path is relative to the root.
type FileEvent struct {
	WatchID string `json:"watch_id"`
	Path    string `json:"path"`
	Op      string `json:"op"`
}
