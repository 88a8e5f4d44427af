// Package fsroot confines file access to a directory tree: every path a
// request names is opened beneath the root with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS), so "..", absolute symlinks, symlinks that lead
// out and /proc magic links cannot escape, whatever is swapped in while
// the call runs. Where the kernel lacks openat2 (before Linux 5.6) it
// falls back to os.Root, the standard library's careful walk.
package fsroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ErrEscape is returned for any path that would leave the root.
var ErrEscape = errors.New("path escapes the allowed root")

// Root is an open directory that paths resolve beneath.
type Root struct {
	path string
	dir  *os.File // O_PATH descriptor of the root
	os   *os.Root // fallback when openat2 is missing
}

// Open opens the directory at path as a root.
func Open(path string) (*Root, error) { return open(path, haveOpenat2) }

// open takes the openat2 probe as a parameter so tests can force the
// fallback.
func open(path string, openat2 func(dirfd int) bool) (*Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", abs, err)
	}
	r := &Root{path: abs, dir: os.NewFile(uintptr(fd), abs)}
	if !openat2(fd) {
		if r.os, err = os.OpenRoot(abs); err != nil {
			r.dir.Close()
			return nil, fmt.Errorf("root %s: %w", abs, err)
		}
	}
	return r, nil
}

func haveOpenat2(dirfd int) bool {
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err != nil {
		return !errors.Is(err, unix.ENOSYS)
	}
	unix.Close(fd)
	return true
}

// Path is the root's absolute path.
func (r *Root) Path() string { return r.path }

// Close releases the root.
func (r *Root) Close() error {
	if r.os != nil {
		r.os.Close()
	}
	return r.dir.Close()
}

// Rel turns a request's path into one relative to the root. An absolute
// path is accepted only inside the root; "" and "/" (of the root) are ".".
func (r *Root) Rel(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: NUL in path", ErrEscape)
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(r.path, filepath.Clean(p))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("%w: %s is outside %s", ErrEscape, p, r.path)
		}
		p = rel
	}
	if p == "" {
		p = "."
	}
	return p, nil
}

// OpenFile opens p (relative, or absolute inside the root) beneath the root.
func (r *Root) OpenFile(p string, flags int, mode uint32) (*os.File, error) {
	rel, err := r.Rel(p)
	if err != nil {
		return nil, err
	}
	if r.os != nil {
		f, err := r.os.OpenFile(rel, flags, os.FileMode(mode))
		return f, r.mapErr(p, err)
	}
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(int(r.dir.Fd()), rel, how)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a rename raced the lookup: the kernel asks to retry
		}
		if err != nil {
			return nil, r.mapErr(p, err)
		}
		return os.NewFile(uintptr(fd), filepath.Join(r.path, rel)), nil
	}
}

// OpenDir opens a directory beneath the root for *at system calls.
func (r *Root) OpenDir(p string) (*os.File, error) {
	return r.OpenFile(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

func (r *Root) mapErr(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: %s", ErrEscape, p)
	case r.os != nil && strings.Contains(err.Error(), "path escapes"):
		return fmt.Errorf("%w: %s", ErrEscape, p)
	}
	return &os.PathError{Op: "open", Path: p, Err: unwrapPath(err)}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WireErr is how a request's path field that could not be opened beneath
// the root is answered: an escape is permission_denied (path_escape), a
// missing path not_found, anything else invalid params naming the field.
func WireErr(field string, err error) error {
	switch {
	case errors.Is(err, ErrEscape):
		return rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonPathEscape, "%s: %v", field, err)
	case errors.Is(err, os.ErrNotExist):
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "%s: %v", field, err)
	}
	return rpc.InvalidParams(field, err.Error())
}
