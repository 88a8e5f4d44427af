package gitguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Every look and every change the guard makes goes through a directory's
// descriptor and a name in it (openat, fstatat, renameat2), never
// following a symbolic link: a process the task left running cannot swap
// a directory for a link between the guard's look and its change, and
// send the change outside the workspace.

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openAt is unix.Openat; a test puts a failing one in its place.
var openAt = unix.Openat

var (
	errTooLarge   = errors.New("too large to read whole")
	errNotRegular = errors.New("not a regular file")
	errTooMany    = errors.New("too many entries to list")
)

func openDir(parent int, name string) (int, error) { return openAt(parent, name, dirFlags, 0) }

func statAt(parent int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// changedSince: st's status changed (its ctime, which no one can set
// back) at or after since.
func changedSince(st *unix.Stat_t, since time.Time) bool {
	return !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(since)
}

// maxList bounds one directory's listing (a test lowers it).
var maxList = 1 << 20

// dirent is a directory's entry as listed: its name, and whether the
// listing said directory (an unknown type is asked of the entry).
type dirent struct {
	name string
	dir  bool
}

// list reads the directory open as fd (getdents64: the name and type of
// each entry, no stat), sorted by name. An entry whose type the file
// system does not give is asked of the entry.
func list(fd int) ([]dirent, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				return nil, fmt.Errorf("getdents64: a record past its buffer")
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, dirent{name: s, dir: direntDir(fd, s, buf[off+18])})
			}
			off += reclen
		}
		if len(out) > maxList {
			return nil, fmt.Errorf("%w (over %d)", errTooMany, maxList)
		}
	}
	slices.SortFunc(out, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// bufs are getdents64's buffers, one a listing at a time.
var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func direntDir(fd int, name string, typ byte) bool {
	if typ != unix.DT_UNKNOWN {
		return typ == unix.DT_DIR
	}
	st, err := statAt(fd, name)
	return err == nil && isDir(&st)
}

// readAt reads the regular file name in parent, at most max bytes.
func readAt(parent int, name string, max int) ([]byte, error) {
	fd, err := openAt(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errNotRegular
	case fi.Size() > int64(max):
		return nil, fmt.Errorf("%w (%d bytes, over %d)", errTooLarge, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err == nil && len(data) > max {
		err = fmt.Errorf("%w (over %d bytes)", errTooLarge, max)
	}
	return data, err
}

// renameAt renames from to to in parent, never over what is there.
func renameAt(parent int, from, to string) error {
	err := unix.Renameat2(parent, from, parent, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if _, err := statAt(parent, to); err == nil { // a file system without RENAME_NOREPLACE
		return unix.EEXIST
	}
	return unix.Renameat(parent, from, parent, to)
}

// writeNewAt writes data to a new file name in parent and returns its
// inode; the file must not exist.
func writeNewAt(parent int, name string, data []byte, mode uint32) (uint64, error) {
	fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return 0, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Ino, unix.Fchmod(fd, mode) // the mode, whatever the umask took
}
