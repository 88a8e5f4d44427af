// Package termcarry carries a terminal's bytes between an API client and
// the executor that runs the terminal, once the API has decided the
// client may attach.
//
// Three carriers exist because executors and clients reach the daemon in
// three ways:
//
//   - Handoff (handoff.go): a client on the daemon's unix socket is handed
//     to the executor with SCM_RIGHTS, and the executor serves it itself;
//     no process relays a keystroke or its echo.
//   - Relay (relay.go): a client the daemon cannot hand over (TLS, whose
//     bytes the daemon must decrypt), or an executor from before
//     handoffs, gets raw frames that the daemon copies to and from a
//     connection of the executor's own.
//   - Dial-back (dialback.go): an executor that dialled back (the slurm
//     backend) cannot take a second connection, so its terminals stay on
//     the shared JSON-RPC connection and the client gets NDJSON frames.
//
// Hub routes the executors' terminal_output and terminal_exit
// notifications to whichever client is attached.
package termcarry

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Hub routes executors' terminal_output and terminal_exit to the client
// attached to each terminal through the API. The zero Hub is ready.
type Hub struct {
	mu      sync.Mutex
	clients map[string]attached // by executor account + "/" + terminal_id
}

// attached is a client attached to a terminal: dial-back (dialBackClient)
// or raw (rawClient).
type attached interface {
	output(protocol.TerminalOutput)
	exit(protocol.TerminalExit)
	replaced() // a newer attach took the terminal
}

func key(user, id string) string { return user + "/" + id }

// Handler serves terminal_output and terminal_exit from user's executor and
// passes everything else to next. They are user's word and reach only
// user's terminals: the key is the connection's user, never a name in the
// message.
func (h *Hub) Handler(user string, next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		switch r.Method {
		case protocol.MethodTerminalOutput:
			var o protocol.TerminalOutput
			if err := json.Unmarshal(r.Params, &o); err != nil {
				return nil, rpc.InvalidParams("params", err.Error())
			}
			if c := h.client(user, o.TerminalID); c != nil {
				c.output(o)
			}
			return nil, nil
		case protocol.MethodTerminalExit:
			var e protocol.TerminalExit
			if err := json.Unmarshal(r.Params, &e); err != nil {
				return nil, rpc.InvalidParams("params", err.Error())
			}
			if c := h.client(user, e.TerminalID); c != nil {
				c.exit(e)
			}
			return nil, nil
		}
		return next.Handle(ctx, r)
	})
}

func (h *Hub) client(user, id string) attached {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clients[key(user, id)]
}

// attach makes c the terminal's client, replacing any earlier one.
func (h *Hub) attach(user, id string, c attached) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients == nil {
		h.clients = map[string]attached{}
	}
	if old := h.clients[key(user, id)]; old != nil {
		old.replaced()
	}
	h.clients[key(user, id)] = c
}

func (h *Hub) detach(user, id string, c attached) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[key(user, id)] == c {
		delete(h.clients, key(user, id))
	}
}

// Attach is one client's attach to terminal ID in User's executor, which
// the API has allowed.
type Attach struct {
	Hub  *Hub
	Exe  *rpc.Client // the executor's shared JSON-RPC connection
	User string      // the executor's account
	ID   string      // the terminal
	Log  *slog.Logger
}

func (a Attach) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// control is the one way the daemon acts on a terminal for a client it
// carries, whichever stream the client speaks: keystrokes through input,
// a resize or terminate as calls to the executor. It returns false when
// the client detached.
func control(ctx context.Context, exe *rpc.Client, id string, c rawframe.Control, input func([]byte)) bool {
	switch {
	case c.Detach:
		return false
	case c.Terminate:
		_ = exe.Call(ctx, protocol.MethodTerminateTerminal, protocol.TerminalIDParams{TerminalID: id}, nil)
	case c.Cols > 0:
		_ = exe.Call(ctx, protocol.MethodResizeTerminal, protocol.ResizeTerminalParams{TerminalID: id, Cols: c.Cols, Rows: c.Rows}, nil)
	case len(c.Input) > 0:
		input(c.Input)
	}
	return true
}
