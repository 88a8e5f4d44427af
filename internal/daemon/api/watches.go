package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// watchBuffer is how many file events a watch stream holds for a slow
// client; past it the stream says "resync" instead of growing.
const watchBuffer = 256

// Watches routes executors' file_event notifications to the API's watch
// streams.
type Watches struct {
	mu   sync.Mutex
	subs map[string]*watchSub // by user + "/" + watch_id
}

type watchSub struct {
	c    chan protocol.FileEvent
	lost bool // events were dropped: the stream owes a resync
}

// Handler serves file_event from user's executor and passes everything
// else to next. An event is user's word and reaches only user's watches
// (the key is the connection's user); a full stream drops, never grows.
func (ws *Watches) Handler(user string, next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if r.Method != protocol.MethodFileEvent {
			return next.Handle(ctx, r)
		}
		var e protocol.FileEvent
		if err := json.Unmarshal(r.Params, &e); err != nil {
			return nil, rpc.InvalidParams("params", err.Error())
		}
		ws.deliver(key(user, e.WatchID), e)
		return nil, nil
	})
}

func (ws *Watches) deliver(k string, e protocol.FileEvent) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	sub := ws.subs[k]
	if sub == nil {
		return
	}
	select {
	case sub.c <- e:
	default:
		sub.lost = true
	}
}

func (ws *Watches) add(user, id string) *watchSub {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.subs == nil {
		ws.subs = map[string]*watchSub{}
	}
	sub := &watchSub{c: make(chan protocol.FileEvent, watchBuffer)}
	ws.subs[key(user, id)] = sub
	return sub
}

func (ws *Watches) remove(user, id string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.subs, key(user, id))
}

// takeLost reports (and clears) whether sub dropped events.
func (ws *Watches) takeLost(sub *watchSub) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	lost := sub.lost
	sub.lost = false
	return lost
}

// watchFiles is GET /v1/executors/{user}/files/watch?path=&recursive=: the
// executor's file events as Server-Sent Events ("file", id counting up).
// The executor cannot replay what a dropped stream missed, so a stream
// resumed with Last-Event-ID starts with "resync" (list again), as does one
// whose client fell more than watchBuffer events behind.
func (s *Server) watchFiles(w http.ResponseWriter, r *http.Request) {
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	if !s.watching.take(person, s.maxWatches()) {
		writeError(w, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyWatches,
			"%s has %d watch streams open, the most one person may", person, s.maxWatches()))
		return
	}
	defer s.watching.put(person)
	seq, resumed, err := watchResume(r)
	if err != nil {
		writeError(w, err)
		return
	}
	user := executor
	c, release, err := s.Pool.Acquire(r.Context(), user)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	q := r.URL.Query()
	p := protocol.WatchParams{Path: q.Get("path"), Recursive: truthy(q.Get("recursive"))}
	if p.Path == "" {
		p.Path = "."
	}
	var res protocol.WatchResult
	if err := c.Call(r.Context(), protocol.MethodWatch, p, &res); err != nil {
		writeError(w, err)
		return
	}
	sub := s.Watches.add(user, res.WatchID)
	defer s.unwatch(c, user, res.WatchID)
	sse := newWatchSSE(w)
	if resumed {
		watchEvent(sse, seq, apiwire.WatchEventResync, []byte(`{}`))
		seq++
	}
	s.pumpWatch(r.Context(), c, sub, sse, seq)
}

// pumpWatch writes sub's events until the client or the executor goes.
func (s *Server) pumpWatch(ctx context.Context, c *rpc.Client, sub *watchSub, sse *sseWriter, seq int64) {
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.Done(): // the executor's connection ended, and its watches
			watchEvent(sse, seq, apiwire.WatchEventResync, []byte(`{}`))
			return
		case <-keep.C:
			_, _ = io.WriteString(sse.w, ": keep-alive\n\n")
			_ = sse.rc.Flush()
		case e := <-sub.c:
			if s.Watches.takeLost(sub) {
				watchEvent(sse, seq, apiwire.WatchEventResync, []byte(`{}`))
				seq++
			}
			data, _ := json.Marshal(e)
			watchEvent(sse, seq, apiwire.WatchEventFile, data)
			seq++
		}
	}
}

func (s *Server) unwatch(c *rpc.Client, user, id string) {
	s.Watches.remove(user, id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Call(ctx, protocol.MethodUnwatch, protocol.UnwatchParams{WatchID: id}, nil)
}

// watchResume reads Last-Event-ID (or ?after=): the stream goes on from
// the next id, after a resync.
func watchResume(r *http.Request) (int64, bool, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, rpc.InvalidParams("Last-Event-ID", "must be an event id")
	}
	return n + 1, true, nil
}

func (s *Server) maxWatches() int {
	if s.MaxWatches > 0 {
		return s.MaxWatches
	}
	return DefaultMaxWatches
}

// newWatchSSE starts the event stream (the task events' writer).
func newWatchSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = sse.rc.Flush()
	return sse
}

func watchEvent(sse *sseWriter, id int64, name string, data []byte) {
	_ = sse.send(name, strconv.FormatInt(id, 10), string(data))
}
