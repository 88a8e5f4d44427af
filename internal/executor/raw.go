package executor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"

	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// RawFunc serves a connection whose first request named a raw method
// (attach_terminal_raw): it answers through reply exactly once, then owns
// conn, whose reads start after that request, until it returns.
type RawFunc func(ctx context.Context, params json.RawMessage, reply func(result any, err error) error, conn net.Conn)

// HandleRaw makes method, as a connection's first request, hand that
// connection to f instead of serving it as JSON-RPC. Call before Serve.
func (s *Server) HandleRaw(method string, f RawFunc) {
	s.raw[method] = f
}

// firstLineMax bounds how much of a connection's start is looked at to
// tell a raw request from JSON-RPC; a longer first line is JSON-RPC.
const firstLineMax = 4096

// route serves an admitted connection: the peer's first line decides
// whether it is a raw stream or JSON-RPC. Until then, and while a raw
// stream lasts, the socket keeps the executor busy and Stop closes it.
func (s *Server) route(ctx context.Context, c *net.UnixConn, cred peer.Cred) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.socks[c] = struct{}{}
	s.busyLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		br := bufio.NewReaderSize(c, firstLineMax)
		req, f := s.rawRequest(firstLine(br))
		if f == nil {
			// Counted as JSON-RPC before it stops counting as a socket, so
			// that the executor is never idle in between.
			conn, log := s.register(bufConn{c, br}, credLog(s.log, cred), peerName(cred))
			s.unsock(c)
			if conn != nil {
				s.serveConn(peer.NewContext(ctx, cred), conn, log, peerName(cred))
			}
			return
		}
		defer s.unsock(c)
		_, _ = br.Discard(len(req.Raw))
		log := s.log.With("peer_uid", cred.UID, "peer_pid", cred.PID, "method", req.Method)
		log.Debug("raw connection accepted")
		f(peer.NewContext(ctx, cred), req.Params, replier(c, req.id), bufConn{c, br})
		_ = c.Close()
		log.Debug("raw connection closed")
	}()
}

func (s *Server) unsock(c *net.UnixConn) {
	s.mu.Lock()
	delete(s.socks, c)
	s.maybeIdleLocked()
	s.mu.Unlock()
}

// firstLine peeks (without consuming) at the first line of br, nil when
// the connection ends or the line does not fit the buffer.
func firstLine(br *bufio.Reader) []byte {
	for {
		b, _ := br.Peek(br.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[:i+1]
		}
		if len(b) == br.Size() {
			return nil
		}
		if _, err := br.Peek(len(b) + 1); err != nil { // waits for more
			return nil
		}
	}
}

type rawReq struct {
	rpc.Request
	id json.RawMessage
}

// rawRequest decodes line when it is a request (with an id) for a raw
// method; otherwise f is nil and the connection is JSON-RPC.
func (s *Server) rawRequest(line []byte) (rawReq, RawFunc) {
	r, id, ok := rpc.ParseRequest(line)
	if !ok {
		return rawReq{}, nil
	}
	return rawReq{r, id}, s.raw[r.Method]
}

// replier writes the one JSON-RPC response of a raw connection.
func replier(c net.Conn, id json.RawMessage) func(any, error) error {
	return func(result any, err error) error { return rpc.WriteResponse(c, id, result, err) }
}

// bufConn is a connection whose reads go through the reader that looked
// at its first line.
type bufConn struct {
	*net.UnixConn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Buffered is how much was read ahead of the caller: a raw method that
// then receives a descriptor (ReadMsgUnix, past the buffer) needs none.
func (c bufConn) Buffered() int { return c.r.Buffered() }
