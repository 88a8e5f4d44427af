// Package watch serves the executor's watch and unwatch methods: inotify
// watches on directories beneath the root, recursive on request (new
// subdirectories are followed), with bursts coalesced into file_event
// notifications. A connection's watches end when it closes.
package watch

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Defaults for Service's limits.
const (
	DefaultMaxPerConn = 16
	DefaultMaxDirs    = 8192
	DefaultCoalesce   = 50 * time.Millisecond
)

// Service owns every watch.
type Service struct {
	Root       *fsroot.Root
	MaxPerConn int           // watches per connection
	MaxDirs    int           // directories per recursive watch
	Coalesce   time.Duration // how long events gather before they are sent

	mu     sync.Mutex
	byConn map[*rpc.Conn]map[string]*watcher
	wg     sync.WaitGroup
}

// Register adds watch and unwatch to m.
func (s *Service) Register(m *rpc.Mux) {
	m.Register(protocol.MethodWatch, s.watch)
	m.Register(protocol.MethodUnwatch, s.unwatch)
}

func (s *Service) limits() (perConn, dirs int, coalesce time.Duration) {
	perConn, dirs, coalesce = s.MaxPerConn, s.MaxDirs, s.Coalesce
	if perConn <= 0 {
		perConn = DefaultMaxPerConn
	}
	if dirs <= 0 {
		dirs = DefaultMaxDirs
	}
	if coalesce <= 0 {
		coalesce = DefaultCoalesce
	}
	return
}

func (s *Service) watch(_ context.Context, r *rpc.Request) (any, error) {
	var p protocol.WatchParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	perConn, maxDirs, coalesce := s.limits()
	if err := s.room(r.Conn, perConn); err != nil {
		return nil, err // before walking a tree that could not be kept
	}
	id := newID()
	w, err := newWatcher(s.Root, r.Conn, id, p, maxDirs, coalesce)
	if err != nil {
		return nil, err
	}
	if err := s.add(r.Conn, id, w, perConn); err != nil {
		w.stop()
		return nil, err
	}
	return protocol.WatchResult{WatchID: id}, nil
}

func tooMany(limit int) error {
	return rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyWatches, "at most %d watches per connection", limit)
}

func (s *Service) room(c *rpc.Conn, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byConn[c]) >= limit {
		return tooMany(limit)
	}
	return nil
}

// add keeps w for c; c's first watch also arranges for c's watches to
// end when it closes.
func (s *Service) add(c *rpc.Conn, id string, w *watcher, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c.Done():
		return rpc.ErrClosed
	default:
	}
	if s.byConn == nil {
		s.byConn = map[*rpc.Conn]map[string]*watcher{}
	}
	ws := s.byConn[c]
	if ws == nil {
		ws = map[string]*watcher{}
		s.byConn[c] = ws
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			<-c.Done()
			s.closeConn(c)
		}()
	}
	if len(ws) >= limit {
		return tooMany(limit)
	}
	ws[id] = w
	return nil
}

func (s *Service) unwatch(_ context.Context, r *rpc.Request) (any, error) {
	var p protocol.UnwatchParams
	if err := rpc.Bind(r.Params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	w := s.byConn[r.Conn][p.WatchID]
	delete(s.byConn[r.Conn], p.WatchID)
	s.mu.Unlock()
	if w == nil {
		return nil, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no watch %q on this connection", p.WatchID)
	}
	w.stop()
	return protocol.UnwatchResult{Unwatched: true}, nil
}

func (s *Service) closeConn(c *rpc.Conn) {
	s.mu.Lock()
	ws := s.byConn[c]
	delete(s.byConn, c)
	s.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// Close ends every watch.
func (s *Service) Close() {
	s.mu.Lock()
	conns := make([]*rpc.Conn, 0, len(s.byConn))
	for c := range s.byConn {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.closeConn(c)
	}
}

// Wait waits for the per-connection goroutines (after their connections
// have closed).
func (s *Service) Wait() { s.wg.Wait() }

func newID() string { return randid.New(8) }

func watchErr(err error) error {
	switch {
	case errors.Is(err, fsroot.ErrEscape):
		return rpc.Errorf(protocol.CodePermissionDenied, protocol.ReasonPathEscape, "%v", err)
	case errors.Is(err, os.ErrNotExist):
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "%v", err)
	}
	return err
}
