package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/executor/procexec"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// MaxLine bounds one line of an agent's output (a big tool result).
const MaxLine = 16 << 20

// Proc is a running agent CLI speaking a line protocol on stdin/stdout.
type Proc struct {
	cmd    *exec.Cmd
	tag    string // AGOR_AGENT_RUN=..., in everything the agent starts
	stdin  io.WriteCloser
	out    io.Reader // stdout, read through lines or an rpc.Conn (ServeRPC)
	lines  *bufio.Scanner
	stderr tail
	wmu    sync.Mutex
	stop   func()
}

// Start runs req.Binary with args in req.Cwd and req.Env, in a process
// group of its own, killed (SIGTERM, then SIGKILL) when ctx ends. A
// missing binary is protocol.TaskAgentMissing with install advice.
func Start(ctx context.Context, req Request, install string, args ...string) (*Proc, error) {
	if _, err := os.Stat(req.Binary); err != nil {
		return nil, &Error{Code: protocol.TaskAgentMissing, Message: fmt.Sprintf("%s is not installed: install with %s (and set its path in the executor's agent configuration)", req.Binary, install)}
	}
	tag := runTag()
	for attempt := 0; ; attempt++ {
		p, out, err := start(req, tag, args)
		// A binary written a moment ago can still be open for writing in a
		// process forked meanwhile (go.dev/issue/22315): exec then fails
		// with ETXTBSY until that process execs or exits. Try again.
		if errors.Is(err, syscall.ETXTBSY) && attempt < 10 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			return nil, &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("start %s: %v", req.Binary, err)}
		}
		p.out, p.lines = out, bufio.NewScanner(out)
		p.lines.Buffer(make([]byte, 64<<10), MaxLine)
		p.stop = procexec.KillOnDone(ctx, p.cmd)
		if req.Started != nil {
			req.Started(p.cmd.Process.Pid)
		}
		return p, nil
	}
}

// start makes one attempt at starting the agent with its pipes.
func start(req Request, tag string, args []string) (*Proc, io.ReadCloser, error) {
	argv := append([]string{req.Binary}, args...)
	if req.Wrap != nil {
		argv = req.Wrap(argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	p := &Proc{cmd: cmd, tag: tag}
	cmd.Dir, cmd.Env = req.Cwd, append(req.Env[:len(req.Env):len(req.Env)], tag)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return p, out, cmd.Start()
}

// Line returns the next line of output, or io.EOF when the agent closed
// its stdout.
func (p *Proc) Line() ([]byte, error) {
	if p.lines.Scan() {
		return p.lines.Bytes(), nil
	}
	if err := p.lines.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// Send writes one line to the agent's stdin; safe for concurrent use.
func (p *Proc) Send(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write to agent: %w", err)
	}
	return nil
}

// CloseInput closes the agent's stdin (its signal to finish).
func (p *Proc) CloseInput() error { return p.stdin.Close() }

// Wait waits for the process, stops the kill watcher and kills whatever
// the agent left running (see reap). A non-zero exit
// comes back as protocol.TaskAgentCrashed with the end of its stderr.
func (p *Proc) Wait() error {
	err := p.cmd.Wait()
	p.stop()
	reap(p.tag)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &Error{Code: protocol.TaskAgentCrashed, Message: fmt.Sprintf("%s: %s", ee.ProcessState, p.stderr.String())}
	}
	return err
}

// Stderr is the end of what the agent wrote on stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// tail keeps the last 8 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - 8<<10; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// runTag is an environment entry unique to one run, inherited by
// everything the agent starts.
func runTag() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "AGOR_AGENT_RUN=" + hex.EncodeToString(b)
}

// reap kills every process whose environment carries tag. Agents run their
// tools in sessions of their own (Claude Code's Bash tool does), beyond the
// process-group kill, and those would outlive the turn (a cancelled
// "sleep 300" ran on, reparented to init); the tag finds them anywhere.
func reap(tag string) {
	for range 5 {
		pids := tagged([]byte(tag + "\x00"))
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tagged lists the processes whose environment holds entry.
func tagged(entry []byte) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && (bytes.HasPrefix(env, entry) || bytes.Contains(env, append([]byte{0}, entry...))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ServeRPC speaks JSON-RPC 2.0 with the agent over its stdout and stdin
// (instead of Line and Send): a lenient rpc.Conn, since agents print
// stray lines, with opts' OnLine seeing each line first (to redact or
// record it). The read loop runs until the agent closes its stdout;
// served is closed once it has returned. Closing the Conn closes only
// the agent's stdin: see CloseRPC.
func (p *Proc) ServeRPC(ctx context.Context, h rpc.Handler, opts rpc.Options) (c *rpc.Conn, served <-chan struct{}) {
	opts.Lenient = true
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxLine == 0 {
		opts.MaxLine = MaxLine
	}
	onLine := opts.OnLine
	opts.OnLine = func(line []byte) []byte {
		if onLine != nil {
			line = onLine(line)
		}
		return objectErrorData(line)
	}
	c = rpc.NewConn(stdio{p.out, p.stdin}, h, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Serve(ctx); err != nil {
			opts.Logger.Debug("agent connection ended", "err", err)
		}
	}()
	return c, done
}

// CloseRPC ends a connection made by ServeRPC: it closes the agent's
// stdin (its signal to finish), waits for the read loop to see its stdout
// close, then for the process (see Wait). An agent still there after
// grace (it may be writing its session to disk) is killed.
func (p *Proc) CloseRPC(c *rpc.Conn, served <-chan struct{}, grace time.Duration, kill func()) error {
	timer := time.AfterFunc(grace, kill)
	defer timer.Stop()
	_ = c.Close() // may wait on a full pipe until the kill
	<-served
	return p.Wait()
}

// stdio joins the agent's stdout (read) and stdin (write, and Close).
type stdio struct {
	io.Reader
	io.WriteCloser
}

// objectErrorData rewrites an error response whose "data" is not an
// object into one with {"value": data}. JSON-RPC allows any value there,
// but rpc.Error's Data is an object, and rpc cannot decode the response
// otherwise: the call it answers would wait until its context ends.
func objectErrorData(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"error"`)) || !bytes.Contains(line, []byte(`"data"`)) ||
		bytes.Contains(line, []byte(`"method"`)) { // only error responses need a look; they name no method
		return line
	}
	var m map[string]json.RawMessage
	var e map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || json.Unmarshal(m["error"], &e) != nil {
		return line
	}
	d := bytes.TrimSpace(e["data"])
	if len(d) == 0 || d[0] == '{' || string(d) == "null" {
		return line
	}
	e["data"], _ = json.Marshal(map[string]json.RawMessage{"value": d})
	m["error"], _ = json.Marshal(e)
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return out
}

// callError is the agent's error response to one of our calls.
type callError struct {
	Method string
	Err    *rpc.Error
}

func (e *callError) Error() string {
	msg := fmt.Sprintf("%s: %s (%d)", e.Method, e.Err.Message, e.Err.Code)
	if len(e.Err.Data) > 0 {
		d, _ := json.Marshal(e.Err.Data)
		msg += ": " + string(d)
	}
	return msg
}

func (e *callError) Unwrap() error { return e.Err }

// said is the agent's own words in its error response: the details
// gemini-cli puts in the data, else the message and any data.
func (e *callError) said() string {
	if d, ok := e.Err.Data["details"].(string); ok && d != "" {
		return d
	}
	if len(e.Err.Data) == 0 {
		return e.Err.Message
	}
	d, _ := json.Marshal(e.Err.Data)
	return e.Err.Message + " " + string(d)
}

// call is c.Call with the agent's error response as a *callError.
func call(ctx context.Context, c *rpc.Conn, method string, params, result any) error {
	err := c.Call(ctx, method, params, result)
	var e *rpc.Error
	if errors.As(err, &e) {
		return &callError{Method: method, Err: e}
	}
	return err
}

// keyRedactor removes the value of env's key (the API key) from an
// agent's output lines, so that no event or log carries it.
func keyRedactor(env []string, key string) func([]byte) []byte {
	secret := []byte(Getenv(env, key))
	return func(b []byte) []byte {
		if len(secret) < 8 || !bytes.Contains(b, secret) {
			return b
		}
		return bytes.ReplaceAll(b, secret, []byte("[REDACTED]"))
	}
}
