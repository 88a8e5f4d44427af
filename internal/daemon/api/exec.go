package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agor-sh/agor/internal/daemon/audit"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

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
