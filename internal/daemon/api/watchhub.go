package api

import (
	"context"
	"encoding/json"
	"sync"

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
