package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Terminals routes executors' terminal_output and terminal_exit to the
// client attached to each terminal through the API.
type Terminals struct {
	mu      sync.Mutex
	clients map[string]attached // by executor account + "/" + terminal_id
	owners  map[string]string   // terminal_id → person, in a shared account's executor
}

// own records that person spawned terminal id in a shared executor.
func (t *Terminals) own(id, person string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owners == nil {
		t.owners = map[string]string{}
	}
	t.owners[id] = person
}

// mine reports whether person may see terminal id: in a shared executor,
// only the terminals they spawned.
func (t *Terminals) mine(id, person string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owners[id] == person
}

// attached is a client attached to a terminal through the API: NDJSON
// (termClient) or raw (rawClient).
type attached interface {
	output(protocol.TerminalOutput)
	exit(protocol.TerminalExit)
	replaced() // a newer attach took the terminal
}

// termClient is one attached NDJSON client. Until the attach reply (scrollback)
// is written, output is held back so nothing arrives out of order.
type termClient struct {
	mu      sync.Mutex
	enc     *json.Encoder
	flush   func() error
	ready   bool
	from    int64 // first seq not in the scrollback
	pending []protocol.TerminalOutput
	held    int           // bytes in pending, at most maxTermPending
	done    chan struct{} // closed on exit
	once    sync.Once
}

// maxTermPending bounds the output held for an NDJSON client until its
// attach reply; a well-behaved executor sends a few chunks in that time.
const maxTermPending = 4 << 20

func key(user, id string) string { return user + "/" + id }

// Handler serves terminal_output and terminal_exit from user's executor and
// passes everything else to next. They are user's word and reach only
// user's terminals: the key is the connection's user, never a name in the
// message.
func (t *Terminals) Handler(user string, next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		switch r.Method {
		case protocol.MethodTerminalOutput:
			var o protocol.TerminalOutput
			if err := json.Unmarshal(r.Params, &o); err != nil {
				return nil, rpc.InvalidParams("params", err.Error())
			}
			if c := t.client(user, o.TerminalID); c != nil {
				c.output(o)
			}
			return nil, nil
		case protocol.MethodTerminalExit:
			var e protocol.TerminalExit
			if err := json.Unmarshal(r.Params, &e); err != nil {
				return nil, rpc.InvalidParams("params", err.Error())
			}
			if c := t.client(user, e.TerminalID); c != nil {
				c.exit(e)
			}
			return nil, nil
		}
		return next.Handle(ctx, r)
	})
}

func (t *Terminals) client(user, id string) attached {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clients[key(user, id)]
}

// attach makes c the terminal's client, replacing any earlier one.
func (t *Terminals) attach(user, id string, c attached) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients == nil {
		t.clients = map[string]attached{}
	}
	if old := t.clients[key(user, id)]; old != nil {
		old.replaced()
	}
	t.clients[key(user, id)] = c
}

func (t *Terminals) detach(user, id string, c attached) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients[key(user, id)] == c {
		delete(t.clients, key(user, id))
	}
}

func (c *termClient) output(o protocol.TerminalOutput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		// The executor sends both this output and the attach reply, so
		// it could hold the reply back and flood: what is kept meanwhile
		// is bounded, and output past the bound is not kept.
		if c.held+len(o.Data) <= maxTermPending {
			c.held += len(o.Data)
			c.pending = append(c.pending, o)
		}
		return
	}
	if o.Seq >= c.from {
		c.write(apiwire.Frame{Output: o.Data})
	}
}

// replaced leaves an NDJSON client open, as it always was: it just gets
// no more output.
func (c *termClient) replaced() {}

func (c *termClient) exit(e protocol.TerminalExit) {
	c.mu.Lock()
	c.write(apiwire.Frame{Exit: &e})
	c.mu.Unlock()
	c.once.Do(func() { close(c.done) })
}

// start writes the scrollback, then whatever output came meanwhile.
func (c *termClient) start(a protocol.AttachTerminalResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready, c.from = true, a.Seq
	if len(a.Scrollback) > 0 {
		c.write(apiwire.Frame{Output: a.Scrollback})
	}
	for _, o := range c.pending {
		if o.Seq >= c.from {
			c.write(apiwire.Frame{Output: o.Data})
		}
	}
	c.pending = nil
}

// write sends one frame; the client's pace holds back the executor's
// notifications (backpressure), a failed client is simply skipped.
func (c *termClient) write(f apiwire.Frame) {
	if c.enc.Encode(f) == nil {
		_ = c.flush()
	}
}

// spawnTerminal starts a shell in user's executor: {cwd, shell, env, cols, rows}.
func (s *Server) spawnTerminal(w http.ResponseWriter, r *http.Request) {
	var p protocol.SpawnTerminalParams
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&p); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	var err error
	if p.Sandbox, err = s.sandboxLevel(p.Sandbox, p.Cwd); err != nil {
		writeError(w, err)
		return
	}
	var res protocol.SpawnTerminalResult
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	if err := s.Pool.Call(r.Context(), executor, protocol.MethodSpawnTerminal, p, &res); err != nil {
		writeError(w, err)
		return
	}
	s.sandboxApplied(audit.Record{User: person, Sandbox: p.Sandbox}, res.Sandbox)
	if s.SharedAccount != "" {
		s.Terminals.own(res.TerminalID, person)
	}
	s.log().Info("terminal spawned", "user", person, "terminal", res.TerminalID, "pid", res.PID)
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listTerminals(w http.ResponseWriter, r *http.Request) {
	var res protocol.ListTerminalsResult
	person, executor := subjectOf(r).Person, subjectOf(r).Executor
	if err := s.Pool.Call(r.Context(), executor, protocol.MethodListTerminals, struct{}{}, &res); err != nil {
		writeError(w, err)
		return
	}
	if s.SharedAccount != "" {
		res.Terminals = slices.DeleteFunc(res.Terminals, func(i protocol.TerminalInfo) bool { return !s.Terminals.mine(i.TerminalID, person) })
	}
	writeJSON(w, http.StatusOK, res)
}

// attachTerminal upgrades the request to a two-way stream for one
// terminal of user's: raw frames (Upgrade: agor-terminal-raw, see
// rawTerminal) or NDJSON Frames (Upgrade: agor-terminal).
func (s *Server) attachTerminal(w http.ResponseWriter, r *http.Request) {
	sj, id := subjectOf(r), r.PathValue("id")
	person := sj.Person
	user := sj.Executor
	upgrade := r.Header.Get("Upgrade")
	if upgrade != "agor-terminal" && upgrade != rawframe.Upgrade {
		writeError(w, rpc.InvalidParams("Upgrade", `must be "agor-terminal-raw" or "agor-terminal"`))
		return
	}
	if s.SharedAccount != "" && !s.Terminals.mine(id, person) {
		writeError(w, rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no terminal %q of %s", id, person))
		return
	}
	client, release, err := s.Pool.Acquire(r.Context(), user)
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	if upgrade == rawframe.Upgrade && s.Pool.RawCapable(user) {
		s.rawTerminal(w, r, client, user, id)
		return
	} // else the NDJSON stream, which the client follows by its Upgrade answer
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, err)
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n")
	c := &termClient{enc: json.NewEncoder(rw), flush: rw.Flush, done: make(chan struct{})}
	s.Terminals.attach(user, id, c)
	defer s.Terminals.detach(user, id, c)
	var a protocol.AttachTerminalResult
	if err := client.Call(r.Context(), protocol.MethodAttachTerminal, protocol.TerminalIDParams{TerminalID: id}, &a); err != nil {
		c.mu.Lock()
		_ = c.enc.Encode(apiwire.AttachError{Error: err.Error()})
		_ = rw.Flush()
		c.mu.Unlock()
		return
	}
	c.start(a)
	s.pump(r.Context(), client, id, rw.Reader, c, conn)
}

// pump carries the client's frames to the executor until the client
// detaches or goes, or the shell exits.
func (s *Server) pump(ctx context.Context, exe *rpc.Client, id string, rd *bufio.Reader, c *termClient, conn net.Conn) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-c.done: // the shell exited: end the client's side too
			if cr, ok := conn.(interface{ CloseRead() error }); ok {
				_ = cr.CloseRead()
			}
		case <-stop:
		}
	}()
	dec := json.NewDecoder(rd)
	for {
		var f apiwire.Frame
		if err := dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log().Debug("terminal client ended", "terminal", id, "err", err)
			}
			return
		}
		input := func(p []byte) {
			_ = exe.Notify(protocol.MethodTerminalInput, protocol.TerminalInputParams{TerminalID: id, Data: p})
		}
		if !control(ctx, exe, id, controlOf(f), input) {
			return
		}
	}
}

// controlOf is an NDJSON frame as the raw stream's Control.
func controlOf(f apiwire.Frame) rawframe.Control {
	c := rawframe.Control{Input: f.Input, Terminate: f.Terminate, Detach: f.Detach}
	if f.Resize != nil {
		c.Cols, c.Rows = f.Resize[0], f.Resize[1]
	}
	return c
}

// control is the one way the daemon acts on a terminal for a client it
// relays, whichever stream the client speaks: keystrokes through input,
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
