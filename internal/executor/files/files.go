// Package files serves the executor's file methods - read_file,
// write_file, write_files, list_files - on paths confined beneath a root.
// Writes are atomic: content goes to a temporary file in the target
// directory, renamed over the target once complete, so a reader sees the
// old file or the new one whole, never a part.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// DefaultChunk is the most content one message carries: 512 KiB, whose
// base64 stays well under the 1 MiB line limit. Larger files move in
// chunks (read_file offset/length, write_file offset/final).
const DefaultChunk = 512 << 10

// maxUploads bounds chunked writes in progress.
const maxUploads = 64

// Service holds the root and the chunked writes in progress.
type Service struct {
	root  *fsroot.Root
	chunk int

	mu      sync.Mutex
	uploads map[string]*upload
}

// New serves files beneath root.
func New(root *fsroot.Root) *Service {
	return &Service{root: root, chunk: DefaultChunk, uploads: map[string]*upload{}}
}

// Register adds the file methods to m.
func (s *Service) Register(m *rpc.Mux) {
	m.Register(protocol.MethodReadFile, rpc.Method(s.read))
	m.Register(protocol.MethodWriteFile, rpc.Method(s.write))
	m.Register(protocol.MethodWriteFiles, rpc.Method(s.writeMany))
	m.Register(protocol.MethodListFiles, rpc.Method(s.list))
}

// Close abandons chunked writes in progress, removing their temp files.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, u := range s.uploads {
		u.abort()
		delete(s.uploads, k)
	}
}

func (s *Service) read(_ context.Context, p protocol.ReadFileParams) (protocol.ReadFileResult, error) {
	f, err := s.root.OpenFile(p.Path, unix.O_RDONLY, 0)
	if err != nil {
		return protocol.ReadFileResult{}, fileErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return protocol.ReadFileResult{}, fileErr(err)
	}
	if !fi.Mode().IsRegular() {
		return protocol.ReadFileResult{}, rpc.InvalidParams("path", fmt.Sprintf("%s is not a regular file", p.Path))
	}
	n := p.Length
	if n == 0 || n > s.chunk {
		n = s.chunk // the rest comes from the next offset
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, p.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return protocol.ReadFileResult{}, fileErr(err)
	}
	return protocol.ReadFileResult{
		Content: buf[:got], Offset: p.Offset, Size: fi.Size(),
		EOF: p.Offset+int64(got) >= fi.Size(), Mode: uint32(fi.Mode().Perm()),
	}, nil
}

// fileErr maps file system errors to protocol errors.
func fileErr(err error) error {
	switch {
	case errors.Is(err, fsroot.ErrEscape):
		return rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonPathEscape, "%v", err)
	case errors.Is(err, os.ErrNotExist):
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "%v", err)
	case errors.Is(err, os.ErrPermission):
		return rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonOSPermission, "%v", err)
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR):
		return rpc.InvalidParams("path", err.Error())
	}
	return err
}

// split is a request path's directory and final name.
func split(p string) (dir, base string, err error) {
	clean := path.Clean(p)
	dir, base = path.Split(clean)
	if base == "" || base == "." || base == ".." || base == "/" {
		return "", "", rpc.InvalidParams("path", fmt.Sprintf("%q does not name a file", p))
	}
	if dir == "" {
		dir = "."
	}
	return dir, base, nil
}
