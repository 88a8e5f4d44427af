package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

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
