package api

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/agor-sh/agor/internal/randid"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// MaxExecOutput bounds what one exec call collects per stream for its
// HTTP reply; the rest is counted, not kept.
const MaxExecOutput = 4 << 20

// Outputs collects exec_output notifications for exec calls made through
// the API, by exec_id.
type Outputs struct {
	mu   sync.Mutex
	byID map[string]*execOutput
}

type execOutput struct {
	stdout, stderr []byte
	dropped        int64
}

func (o *Outputs) start() (string, *execOutput) {
	id := randid.New(12)
	out := &execOutput{}
	o.mu.Lock()
	if o.byID == nil {
		o.byID = map[string]*execOutput{}
	}
	o.byID[id] = out
	o.mu.Unlock()
	return id, out
}

func (o *Outputs) end(id string) {
	o.mu.Lock()
	delete(o.byID, id)
	o.mu.Unlock()
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
		var p protocol.ExecOutput
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		o.append(p.ExecID, p.Stream, p.Data)
		return nil, nil
	})
}

func (o *Outputs) append(id, stream string, data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.byID[id]
	if out == nil {
		return
	}
	buf := &out.stdout
	if stream == protocol.StreamStderr {
		buf = &out.stderr
	}
	if room := MaxExecOutput - len(*buf); room < len(data) {
		out.dropped += int64(len(data) - max(room, 0))
		data = data[:max(room, 0)]
	}
	*buf = append(*buf, data...)
}

// exec runs a command in the user's executor and returns its status and
// output (up to MaxExecOutput a stream).
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var b apiwire.ExecBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&b); err != nil {
		writeError(w, rpc.InvalidParams("body", err.Error()))
		return
	}
	level, err := s.sandboxLevel(b.Sandbox)
	if err != nil {
		writeError(w, err)
		return
	}
	id, out := s.Outputs.start()
	defer s.Outputs.end(id)
	params := protocol.ExecParams{ExecID: id, Argv: b.Argv, Cwd: b.Cwd, Env: b.Env, Stdin: b.Stdin, TimeoutMS: b.TimeoutMS, Sandbox: level}
	var res apiwire.ExecReply
	if err := s.Pool.Call(r.Context(), subjectOf(r).Executor, protocol.MethodExec, params, &res.ExecResult); err != nil {
		writeError(w, err)
		return
	}
	// Notifications and the response arrive in send order: all output is in.
	s.Outputs.mu.Lock()
	res.Stdout, res.Stderr, res.OutputDroppedBytes = string(out.stdout), string(out.stderr), out.dropped
	s.Outputs.mu.Unlock()
	writeJSON(w, http.StatusOK, res)
}
