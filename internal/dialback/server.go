package dialback

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
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
	// Jobs.Release(job) when the connection ends.
	Deliver func(Accepted)
	// MaxPending bounds the connections that have not yet said hello, in
	// all and from one remote address (zero: DefaultMaxPending,
	// DefaultMaxPendingPerRemote). Anyone who can reach the port can
	// open them, and each costs a goroutine and a descriptor for up to
	// helloTimeout; past a bound a new one is closed at once.
	MaxPending, MaxPendingPerRemote int
}

// Defaults for the Server's bounds.
const (
	DefaultMaxPending          = 256
	DefaultMaxPendingPerRemote = 16
)

// Accept errors (EMFILE, ENFILE, ECONNABORTED) pass: the listener waits
// and accepts again, from firstAcceptRetry doubling to maxAcceptRetry.
const (
	firstAcceptRetry = 5 * time.Millisecond
	maxAcceptRetry   = time.Second
)

// Serve accepts on ln until ctx ends, and returns once every connection
// it is still reading a hello from has been answered.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cfg := s.TLS.Clone()
	cfg.MinVersion = tls.VersionTLS13
	context.AfterFunc(ctx, func() { ln.Close() })
	g := gate{max: cmp.Or(s.MaxPending, DefaultMaxPending), maxPer: cmp.Or(s.MaxPendingPerRemote, DefaultMaxPendingPerRemote)}
	var admits sync.WaitGroup
	defer admits.Wait()
	wait := firstAcceptRetry
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.log().Warn("dial-back accept failed; retrying", "err", err, "in", wait)
			if !sleep(ctx, wait) {
				return nil
			}
			wait = min(2*wait, maxAcceptRetry)
			continue
		}
		wait = firstAcceptRetry
		remote := remoteHost(c)
		if !g.take(remote) {
			s.log().Debug("dial-back refused before hello: too many pending", "remote", remote)
			c.Close()
			continue
		}
		admits.Add(1)
		go func() {
			defer admits.Done()
			defer g.done(remote)
			s.admit(tls.Server(c, cfg))
		}()
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// gate counts the connections waiting for their hello.
type gate struct {
	max, maxPer int
	mu          sync.Mutex
	total       int
	by          map[string]int
}

func (g *gate) take(remote string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total >= g.max || g.by[remote] >= g.maxPer {
		return false
	}
	if g.by == nil {
		g.by = map[string]int{}
	}
	g.total++
	g.by[remote]++
	return true
}

func (g *gate) done(remote string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.by[remote]--; g.by[remote] <= 0 {
		delete(g.by, remote)
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
				s.Jobs.Release(job)
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
