package dialback

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Bounds on what a dialler may do before it has proved itself: a peer
// that stalls the handshake or the hello, or sends a longer line, is cut.
const (
	helloTimeout = 10 * time.Second
	maxHello     = 4096
)

// Accepted is one proved executor connection.
type Accepted struct {
	Job  Job
	PID  int
	Conn net.Conn // carries the executor protocol from here on
}

// Server takes executors' dial-backs on a TLS listener.
type Server struct {
	Jobs *Jobs
	TLS  *tls.Config // the daemon's certificate; TLS 1.3 is required
	Log  *slog.Logger
	// Deliver receives each proved connection; it owns Conn and calls
	// Jobs.Release(job id) when the connection ends.
	Deliver func(Accepted)
}

// Serve accepts on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cfg := s.TLS.Clone()
	cfg.MinVersion = tls.VersionTLS13
	tl := tls.NewListener(ln, cfg)
	context.AfterFunc(ctx, func() { tl.Close() })
	for {
		c, err := tl.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go s.admit(c)
	}
}

// admit reads and answers the hello within helloTimeout, then delivers.
func (s *Server) admit(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	br := bufio.NewReaderSize(c, maxHello)
	id, hello, err := readHello(br)
	if err == nil {
		var job Job
		job, err = s.Jobs.Check(hello.Token, hello.User, hello.JobID, hello.Node)
		if err == nil {
			if err = reply(c, id, protocol.HelloResult{Accepted: true}, nil); err != nil {
				s.Jobs.Release(job.JobID)
				c.Close()
				return
			}
			_ = c.SetDeadline(time.Time{})
			s.log().Info("executor dialled back", "user", job.User, "job", job.JobID, "node", job.Node, "remote", c.RemoteAddr().String())
			s.Deliver(Accepted{Job: job, PID: hello.PID, Conn: &bufferedConn{Conn: c, r: br}})
			return
		}
	}
	s.log().Warn("dial-back refused", "remote", c.RemoteAddr().String(), "user", hello.User, "job", hello.JobID, "err", err)
	_ = reply(c, id, nil, rpc.Errorf(protocol.CodeTokenInvalid, protocol.ReasonUnauthenticated, "dial-back refused"))
	c.Close()
}

// readHello reads one JSON-RPC request line naming MethodHello.
func readHello(br *bufio.Reader) (json.RawMessage, protocol.HelloParams, error) {
	var hello protocol.HelloParams
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, hello, fmt.Errorf("hello longer than %d bytes", maxHello)
		}
		return nil, hello, fmt.Errorf("reading the hello: %w", err)
	}
	req, id, ok := rpc.ParseRequest(line)
	if !ok || req.Method != protocol.MethodHello {
		return id, hello, fmt.Errorf("first line is not a %s request", protocol.MethodHello)
	}
	if err := json.Unmarshal(req.Params, &hello); err != nil {
		return id, hello, fmt.Errorf("hello params: %w", err)
	}
	return id, hello, hello.Validate()
}

func reply(w io.Writer, id json.RawMessage, result any, e *rpc.Error) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if e != nil {
		return rpc.WriteResponse(w, id, nil, e)
	}
	return rpc.WriteResponse(w, id, result, nil)
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// bufferedConn reads first what the hello's reader already holds.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
