package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

type upload struct {
	dir     *os.File
	tmp     string
	base    string
	f       *os.File
	written int64
	mode    uint32
}

func (s *Service) write(_ context.Context, p protocol.WriteFileParams) (protocol.WriteFileResult, error) {
	if len(p.Content) > s.chunk {
		e := rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonChunkTooLarge,
			"content of %d bytes exceeds the %d-byte chunk limit: send it in chunks with offset and final=false", len(p.Content), s.chunk)
		e.Data["limit"] = s.chunk
		return protocol.WriteFileResult{}, e
	}
	u, err := s.uploadFor(p)
	if err != nil {
		return protocol.WriteFileResult{}, err
	}
	if _, err := u.f.Write(p.Content); err != nil {
		s.drop(p.Path)
		return protocol.WriteFileResult{}, fileErr(err)
	}
	u.written += int64(len(p.Content))
	res := protocol.WriteFileResult{Path: p.Path, Size: u.written}
	if !p.IsFinal() {
		return res, nil
	}
	s.forget(p.Path)
	if err := u.commit(); err != nil {
		return protocol.WriteFileResult{}, fileErr(err)
	}
	res.Committed = true
	return res, nil
}

// uploadFor starts a write at offset 0, or finds the one it continues.
func (s *Service) uploadFor(p protocol.WriteFileParams) (*upload, error) {
	key := path.Clean(p.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.uploads[key]; old != nil && p.Offset == 0 {
		old.abort() // a fresh start replaces an abandoned one
		delete(s.uploads, key)
	}
	if p.Offset > 0 {
		u := s.uploads[key]
		if u == nil || u.written != p.Offset {
			have := int64(0)
			if u != nil {
				have = u.written
			}
			return nil, rpc.InvalidParams("offset", fmt.Sprintf("write of %s continues at %d, not %d", p.Path, have, p.Offset))
		}
		return u, nil
	}
	if len(s.uploads) >= maxUploads {
		return nil, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyUploads, "%d chunked writes already in progress", maxUploads)
	}
	u, err := s.begin(p)
	if err != nil {
		return nil, err
	}
	if !p.IsFinal() {
		s.uploads[key] = u
	}
	return u, nil
}

func (s *Service) forget(p string) {
	s.mu.Lock()
	delete(s.uploads, path.Clean(p))
	s.mu.Unlock()
}

func (s *Service) drop(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.uploads[path.Clean(p)]; u != nil {
		u.abort()
		delete(s.uploads, path.Clean(p))
	}
}

// begin opens the target's directory beneath the root and creates the
// temporary file in it, by name, relative to that directory.
func (s *Service) begin(p protocol.WriteFileParams) (*upload, error) {
	dirPath, base, err := split(p.Path)
	if err != nil {
		return nil, err
	}
	dir, err := s.root.OpenDir(dirPath)
	if err != nil {
		return nil, fileErr(err)
	}
	// A new file is 0666 less the umask, as open(2) would make it. A
	// regular file it replaces lends its mode; a symbolic link does not
	// (its 0777 would make the file world-writable): the link itself is
	// replaced by the file, never followed.
	mode := 0o666 &^ umask()
	var st unix.Stat_t
	if unix.Fstatat(int(dir.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			dir.Close()
			return nil, rpc.InvalidParams("path", p.Path+" is a directory")
		case unix.S_IFREG:
			mode = st.Mode & 0o7777
		}
	}
	if p.Mode != nil {
		mode = *p.Mode
	}
	u := &upload{dir: dir, base: base, mode: mode, tmp: "." + base + ".agor-" + randomSuffix()}
	fd, err := unix.Openat(int(dir.Fd()), u.tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		dir.Close()
		return nil, fileErr(err)
	}
	u.f = os.NewFile(uintptr(fd), u.tmp)
	return u, nil
}

// commit makes the file durable and puts it in place in one rename.
func (u *upload) commit() error {
	defer u.dir.Close()
	err := u.f.Chmod(os.FileMode(u.mode & 0o777))
	if err == nil && u.mode&0o7000 != 0 {
		err = unix.Fchmod(int(u.f.Fd()), u.mode)
	}
	if err == nil {
		err = u.f.Sync()
	}
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(int(u.dir.Fd()), u.tmp, int(u.dir.Fd()), u.base)
	}
	if err != nil {
		_ = unix.Unlinkat(int(u.dir.Fd()), u.tmp, 0)
	}
	return err
}

func (u *upload) abort() {
	u.f.Close()
	_ = unix.Unlinkat(int(u.dir.Fd()), u.tmp, 0)
	u.dir.Close()
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Service) writeMany(ctx context.Context, p protocol.WriteFilesParams) (protocol.WriteFilesResult, error) {
	var out protocol.WriteFilesResult
	for _, f := range p.Files {
		r, err := s.write(ctx, f)
		fr := protocol.FileResult{Path: f.Path, Size: r.Size}
		if err != nil {
			fr.Error = asRPC(err)
		} else {
			out.Written++
		}
		out.Results = append(out.Results, fr)
	}
	return out, nil
}

func asRPC(err error) *rpc.Error {
	if e, ok := err.(*rpc.Error); ok {
		return e
	}
	return rpc.Errorf(rpc.CodeInternalError, "internal_error", "%v", err)
}

// umask is this process's file mode creation mask, read from
// /proc/self/status: umask(2) can only be read by setting it, which would
// race with every thread creating files meanwhile. 022 if unreadable.
func umask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	return 0o022
}
