package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// File limits: what one request may read or write, and how many watch
// streams one person may hold open.
const (
	DefaultMaxFileBytes = 1 << 30
	DefaultMaxWatches   = 8
	// fileChunk is what one read_file or write_file message carries (the
	// executor's own chunk: its base64 stays under the 1 MiB line limit).
	fileChunk = 512 << 10
	// maxFilesBody bounds POST .../files (several whole files, base64).
	maxFilesBody = 16 << 20
)

// ReasonFileTooLarge: a read or write over MaxFileBytes.
const ReasonFileTooLarge = "file_too_large"

func (s *Server) maxFileBytes() int64 {
	if s.MaxFileBytes > 0 {
		return s.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// listFiles is GET /v1/executors/{user}/files?path=&recursive=&pattern=&max=.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := protocol.ListFilesParams{Path: q.Get("path"), Pattern: q.Get("pattern"), Recursive: truthy(q.Get("recursive"))}
	if v := q.Get("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, rpc.InvalidParams("max", "must be a number"))
			return
		}
		p.Max = n
	}
	if p.Path == "" {
		p.Path = "."
	}
	var res protocol.ListFilesResult
	if err := s.Pool.Call(r.Context(), subjectOf(r).Executor, protocol.MethodListFiles, p, &res); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func truthy(v string) bool { return v == "1" || v == "true" || v == "yes" }

// span is the part of a file a read asks for: ?offset=&length= or a
// single "Range: bytes=A-B" / "bytes=A-".
type span struct {
	offset, length int64 // length -1: to the end
	ranged         bool
}

func readSpan(r *http.Request) (span, error) {
	sp := span{length: -1}
	if h := r.Header.Get("Range"); h != "" {
		a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
		from, err1 := strconv.ParseInt(a, 10, 64)
		if !strings.HasPrefix(h, "bytes=") || !ok || err1 != nil || from < 0 || strings.Contains(b, ",") {
			return sp, rpc.InvalidParams("Range", `must be one range "bytes=FROM-[TO]"`)
		}
		sp.offset, sp.ranged = from, true
		if b != "" {
			to, err := strconv.ParseInt(b, 10, 64)
			if err != nil || to < from {
				return sp, rpc.InvalidParams("Range", "TO must be a number not below FROM")
			}
			sp.length = to - from + 1
		}
		return sp, nil
	}
	q := r.URL.Query()
	for _, f := range []struct {
		name string
		to   *int64
	}{{"offset", &sp.offset}, {"length", &sp.length}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return sp, rpc.InvalidParams(f.name, "must be a non-negative number")
			}
			*f.to = n
			sp.ranged = true
		}
	}
	return sp, nil
}

// readFile is GET /v1/executors/{user}/files/content?path=: the bytes,
// streamed chunk by chunk from the executor (ranged with Range or
// ?offset=&length=). The first chunk's error (no such file, a path
// outside the root) is the executor's, passed through.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	sp, err := readSpan(r)
	if err != nil {
		writeError(w, err)
		return
	}
	c, release, err := s.Pool.Acquire(r.Context(), subjectOf(r).Executor)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	var chunk protocol.ReadFileResult
	if err := c.Call(r.Context(), protocol.MethodReadFile, protocol.ReadFileParams{Path: path, Offset: sp.offset}, &chunk); err != nil {
		writeError(w, err)
		return
	}
	n := max(chunk.Size-sp.offset, 0)
	if sp.length >= 0 {
		n = min(n, sp.length)
	}
	if n > s.maxFileBytes() {
		writeError(w, rpc.Errorf(protocol.CodeLimitReached, ReasonFileTooLarge,
			"%s is %d bytes, more than one read may take (%d): read it in ranges", path, n, s.maxFileBytes()))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("X-Agor-File-Size", strconv.FormatInt(chunk.Size, 10))
	h.Set("X-Agor-File-Mode", fmt.Sprintf("%04o", chunk.Mode))
	status := http.StatusOK
	if sp.ranged {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", sp.offset, sp.offset+n-1, chunk.Size))
	}
	w.WriteHeader(status)
	s.streamFile(r, c, path, sp.offset, n, chunk, w)
}

// streamFile writes n bytes from off, starting with first (already read).
// An error after the header is the end of the body: the client sees it
// shorter than Content-Length.
func (s *Server) streamFile(r *http.Request, c *rpc.Client, path string, off, n int64, chunk protocol.ReadFileResult, w io.Writer) {
	for n > 0 {
		data := chunk.Content[:min(int64(len(chunk.Content)), n)]
		if _, err := w.Write(data); err != nil || len(data) == 0 {
			return
		}
		off, n = off+int64(len(data)), n-int64(len(data))
		if n == 0 || chunk.EOF {
			return
		}
		chunk = protocol.ReadFileResult{}
		if err := c.Call(r.Context(), protocol.MethodReadFile, protocol.ReadFileParams{Path: path, Offset: off}, &chunk); err != nil {
			s.log().Warn("file read cut short", "path", path, "offset", off, "err", err)
			return
		}
	}
}

// writeFile is PUT /v1/executors/{user}/files/content?path=&mode=: the
// body becomes the file, atomically (the executor writes beside it and
// renames at the end), in chunks as it arrives. Audited.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := protocol.WriteFileParams{Path: q.Get("path")}
	if v := q.Get("mode"); v != "" {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil {
			writeError(w, rpc.InvalidParams("mode", "must be an octal permission mode"))
			return
		}
		mode := uint32(m)
		p.Mode = &mode
	}
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	c, release, err := s.Pool.Acquire(r.Context(), executor)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	body := http.MaxBytesReader(w, r.Body, s.maxFileBytes())
	size, err := s.upload(r, c, p, body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = rpc.Errorf(protocol.CodeLimitReached, ReasonFileTooLarge, "more than one write may take (%d bytes)", s.maxFileBytes())
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.auditWrite(r, person, p.Path, size)
	writeJSON(w, http.StatusOK, apiwire.FileWritten{Path: p.Path, Size: size})
}

// upload sends body as write_file chunks, each read whole before it is
// sent; the one after which the body has nothing left is marked final.
func (s *Server) upload(r *http.Request, c *rpc.Client, p protocol.WriteFileParams, body io.Reader) (int64, error) {
	br := bufio.NewReaderSize(body, fileChunk)
	buf := make([]byte, fileChunk)
	var off int64
	for {
		n, err := io.ReadFull(br, buf)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return off, err
		}
		_, peekErr := br.Peek(1)
		if peekErr != nil && !errors.Is(peekErr, io.EOF) {
			return off, peekErr
		}
		final := peekErr != nil
		p.Content, p.Offset, p.Final = buf[:n], off, &final
		if err := c.Call(r.Context(), protocol.MethodWriteFile, p, nil); err != nil {
			return off, err
		}
		off += int64(n)
		if final {
			return off, nil
		}
		p.Mode = nil // the first chunk set it
	}
}

// writeFiles is POST /v1/executors/{user}/files: several whole files, each
// atomically (write_files). Each one written is audited.
func (s *Server) writeFiles(w http.ResponseWriter, r *http.Request) {
	var b apiwire.FilesBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFilesBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	p := protocol.WriteFilesParams{Files: make([]protocol.WriteFileParams, len(b.Files))}
	for i, f := range b.Files {
		p.Files[i] = protocol.WriteFileParams{Path: f.Path, Content: f.Content, Mode: f.Mode}
	}
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	var res protocol.WriteFilesResult
	if err := s.Pool.Call(r.Context(), executor, protocol.MethodWriteFiles, p, &res); err != nil {
		writeError(w, err)
		return
	}
	for _, f := range res.Results {
		if f.Error == nil {
			s.auditWrite(r, person, f.Path, f.Size)
		}
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) auditWrite(r *http.Request, person, path string, size int64) {
	if s.Audit != nil {
		rec := audit.Record{Action: audit.FileWritten, User: person, Path: path, Bytes: size}
		if by := s.caller(r).user.Name; by != person {
			rec.Reason = "written by " + by // an admin, for person
		}
		s.Audit.Log(rec)
	}
}
