package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// What the daemon keeps of exec output. A client that asks for the
// stream (Accept: application/x-ndjson, as agorctl does) gets each chunk
// as it comes and the daemon holds at most one chunk per call: the
// executor waits until the client took it. A client that asks for the
// one JSON reply gets at most MaxExecOutput a stream, and all of one
// person's such replies in flight hold at most MaxExecHeldPerUser
// together; the rest is counted in output_dropped_bytes, not kept.
const (
	MaxExecOutput      = 4 << 20
	MaxExecHeldPerUser = 16 << 20
	// execWriteStall is how long a streamed chunk may wait for the
	// client to read. Until it does, the executor's connection waits
	// (that person's only), so a client that stops reading loses its
	// call instead of holding the connection for good.
	execWriteStall = 30 * time.Second
)

// Outputs routes exec_output notifications to the exec calls made
// through the API, by exec_id.
type Outputs struct {
	mu   sync.Mutex
	byID map[string]*execOutput
	held map[string]int64 // bytes buffered for JSON replies, by person
}

// execOutput is one call's output: handed over one chunk at a time when
// ch is set, else buffered up to the bounds.
type execOutput struct {
	person string
	ch     chan protocol.ExecOutput // the streaming handler's; nil: buffered
	gone   chan struct{}            // closed when the call's handler stops taking output
	once   sync.Once

	stdout, stderr []byte
	dropped        int64
}

func (o *Outputs) start(person string, stream bool) (string, *execOutput) {
	id := randid.New(12)
	out := &execOutput{person: person, gone: make(chan struct{})}
	if stream {
		out.ch = make(chan protocol.ExecOutput)
	}
	o.mu.Lock()
	if o.byID == nil {
		o.byID, o.held = map[string]*execOutput{}, map[string]int64{}
	}
	o.byID[id] = out
	o.mu.Unlock()
	return id, out
}

// end forgets the call and gives back what its buffers held; output that
// arrives afterwards is dropped. It may be called more than once.
func (o *Outputs) end(id string) {
	o.mu.Lock()
	out := o.byID[id]
	delete(o.byID, id)
	if out != nil {
		if o.held[out.person] -= int64(len(out.stdout) + len(out.stderr)); o.held[out.person] <= 0 {
			delete(o.held, out.person)
		}
		out.stdout, out.stderr = nil, nil
	}
	o.mu.Unlock()
	if out != nil {
		out.once.Do(func() { close(out.gone) })
	}
}

// Handler serves exec_output and passes every other request to next.
func (o *Outputs) Handler(next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if r.Method != protocol.MethodExecOutput {
			if next == nil {
				return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method_not_found", "method %q not found", r.Method)
			}
			return next.Handle(ctx, r)
		}
		// Said by this executor's user, about an exec_id only the daemon
		// made and gave to this executor: it reaches that one call. What
		// is kept of it is bounded per call and per person (above).
		var p protocol.ExecOutput
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		o.deliver(ctx, p)
		return nil, nil
	})
}

// deliver runs on the connection's read loop. For a streamed call it
// waits until the handler took the chunk: the executor then waits too,
// and the command behind it once its pipe is full. That is the
// backpressure; it holds only this user's connection.
func (o *Outputs) deliver(ctx context.Context, p protocol.ExecOutput) {
	o.mu.Lock()
	out := o.byID[p.ExecID]
	if out != nil && out.ch == nil {
		o.bufferLocked(out, p.Stream, p.Data)
	}
	o.mu.Unlock()
	if out == nil || out.ch == nil {
		return
	}
	select {
	case out.ch <- p:
	case <-out.gone:
	case <-ctx.Done():
	}
}

func (o *Outputs) bufferLocked(out *execOutput, stream string, data []byte) {
	buf := &out.stdout
	if stream == protocol.StreamStderr {
		buf = &out.stderr
	}
	room := min(MaxExecOutput-int64(len(*buf)), MaxExecHeldPerUser-o.held[out.person])
	if room < int64(len(data)) {
		out.dropped += int64(len(data)) - max(room, 0)
		data = data[:max(room, 0)]
	}
	*buf = append(*buf, data...)
	o.held[out.person] += int64(len(data))
}

// exec runs a command in the user's executor and returns its status and
// output: streamed when the client accepts NDJSON, else as one JSON
// reply with up to MaxExecOutput a stream.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var b apiwire.ExecBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	level, err := s.sandboxLevel(b.Sandbox, b.Cwd)
	if err != nil {
		writeError(w, err)
		return
	}
	sub := subjectOf(r)
	turn, err := s.heavy.take(r.Context(), sub.Person)
	if err != nil {
		return // the client went away while waiting its turn
	}
	defer turn()
	stream := strings.Contains(r.Header.Get("Accept"), apiwire.NDJSON)
	id, out := s.Outputs.start(sub.Person, stream)
	defer s.Outputs.end(id)
	params := protocol.ExecParams{ExecID: id, Argv: b.Argv, Cwd: b.Cwd, Env: b.Env, Stdin: b.Stdin, TimeoutMS: b.TimeoutMS, Sandbox: level}
	if stream {
		s.execStream(w, r, id, out, params)
		return
	}
	var res protocol.ExecResult
	if err := s.Pool.Call(r.Context(), sub.Executor, protocol.MethodExec, params, &res); err != nil {
		writeError(w, err)
		return
	}
	s.sandboxApplied(audit.Record{User: sub.Person, Sandbox: level}, res.Sandbox)
	// Notifications and the response arrive in send order: all output is in.
	s.Outputs.mu.Lock()
	stdout, stderr, dropped := out.stdout, out.stderr, out.dropped
	s.Outputs.mu.Unlock()
	writeExecReply(w, res, stdout, stderr, dropped)
}

// writeExecReply writes apiwire.ExecReply without building it in memory:
// JSON spells a NUL in six bytes, so a 4 MiB output would take 24.
func writeExecReply(w http.ResponseWriter, res protocol.ExecResult, stdout, stderr []byte, dropped int64) {
	rest, _ := json.Marshal(struct {
		protocol.ExecResult
		OutputDroppedBytes int64 `json:"output_dropped_bytes,omitempty"`
	}{res, dropped})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"stdout":`))
	_ = writeJSONString(w, stdout)
	_, _ = w.Write([]byte(`,"stderr":`))
	_ = writeJSONString(w, stderr)
	_, _ = w.Write([]byte{','})
	_, _ = w.Write(rest[1:]) // the result's fields and its closing brace
	_, _ = w.Write([]byte{'\n'})
}

type execDone struct {
	res protocol.ExecResult
	err error
}

// execStream runs the call on a goroutine of its own and writes each
// chunk as the read loop hands it over, then the result. The header waits
// for the first line, so a call refused at once is an HTTP error as before.
func (s *Server) execStream(w http.ResponseWriter, r *http.Request, id string, out *execOutput, params protocol.ExecParams) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := make(chan execDone, 1)
	go func() {
		var d execDone
		d.err = s.Pool.Call(ctx, subjectOf(r).Executor, protocol.MethodExec, params, &d.res)
		if d.err == nil {
			s.sandboxApplied(audit.Record{User: subjectOf(r).Person, Sandbox: params.Sandbox}, d.res.Sandbox)
		}
		done <- d
	}()
	lw := &lineWriter{w: w, rc: http.NewResponseController(w)}
	defer lw.rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	for {
		select {
		case p := <-out.ch:
			if lw.line(apiwire.ExecLine{Stream: p.Stream, Data: p.Data}) != nil {
				s.Outputs.end(id) // the client stopped reading: the command goes
				cancel()
				<-done
				return
			}
		case d := <-done: // every chunk came before it
			lw.finish(d)
			return
		}
	}
}

// lineWriter writes NDJSON lines, each with a deadline.
type lineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (l *lineWriter) line(v apiwire.ExecLine) error {
	if !l.started {
		l.w.Header().Set("Content-Type", apiwire.NDJSON)
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_ = l.rc.SetWriteDeadline(time.Now().Add(execWriteStall))
	if _, err := l.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return l.rc.Flush()
}

// finish writes the result, or the error: as the HTTP reply when nothing
// was sent yet, else as the last line.
func (l *lineWriter) finish(d execDone) {
	switch {
	case d.err == nil:
		_ = l.line(apiwire.ExecLine{Result: &d.res})
	case !l.started:
		writeError(l.w, d.err)
	default:
		_, body := errorBody(d.err)
		_ = l.line(apiwire.ExecLine{Error: &body.Error})
	}
}

// writeJSONString writes b as a JSON string, as encoding/json would
// (invalid UTF-8 as U+FFFD), a piece at a time; pieces end on rune
// boundaries so that a rune is never split in two.
func writeJSONString(w io.Writer, b []byte) error {
	if _, err := w.Write([]byte{'"'}); err != nil {
		return err
	}
	for len(b) > 0 {
		n := min(len(b), 16<<10)
		for k := 0; k < utf8.UTFMax && n < len(b) && n > 0 && !utf8.RuneStart(b[n]); k++ {
			n--
		}
		if n == 0 {
			n = min(len(b), 16<<10)
		}
		enc, _ := json.Marshal(string(b[:n]))
		if _, err := w.Write(enc[1 : len(enc)-1]); err != nil {
			return err
		}
		b = b[n:]
	}
	_, err := w.Write([]byte{'"'})
	return err
}
