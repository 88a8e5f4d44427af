package terminal

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// term is one running terminal. Its reader goroutine owns the output:
// every chunk goes into the scrollback ring and, when a connection is
// attached, out as the next terminal_output. Nothing else sends on its
// behalf, so output and the final terminal_exit stay in order.
type term struct {
	id     string
	cfg    *Config
	cmd    *exec.Cmd
	master *os.File // non-blocking, so Close and deadlines interrupt it
	inputC chan []byte
	// sandbox is what confinement the shell got; cleanup removes its
	// private temp directory once it has exited.
	sandbox protocol.SandboxInfo
	cleanup func()

	exited   chan struct{} // the shell has been waited for
	hupC     chan struct{} // closed by terminate
	readDone chan struct{} // the reader has seen the end of the output
	done     chan struct{} // terminal_exit sent; helpers return
	hupOnce  sync.Once
	wg       sync.WaitGroup // waiter, writer, killer, connection watchers

	// outMu orders writes to raw: emit's, and attachRaw's reply and
	// replay, which must come before any live output.
	outMu sync.Mutex

	mu   sync.Mutex
	conn *rpc.Conn     // attached connection, nil while detached
	gate chan struct{} // closed once conn's attach reply has gone out
	// exitOnly: a raw stream took conn's place since conn attached; conn
	// (the daemon's, which lives on) still gets terminal_exit, but not
	// the output, and no longer counts as attached.
	exitOnly bool
	raw      net.Conn // raw stream (attach_terminal_raw): output goes there instead
	seq      int64    // of the next chunk
	off      int64    // output bytes so far: the raw stream's offsets
	ring     *ring
	cols     int
	rows     int
	grace    *time.Timer // running while detached
	finished bool
	// exit, when set (a Program's), is told the exit (capacity 1).
	exit chan protocol.TerminalExit
}

// start opens the PTY and starts the shell on it, in its own session
// with the PTY as controlling terminal, in p.Cwd beneath the root.
func (s *Service) start(id string, p protocol.SpawnTerminalParams) (*term, error) {
	dir, err := s.cfg.Root.OpenDir(p.Cwd)
	if err != nil {
		return nil, fsroot.WireErr("cwd", err)
	}
	defer dir.Close()
	shell := p.Shell
	if shell == "" {
		shell = s.acct.shell
	}
	cmd, spec, applied, err := s.command(shell, p.Sandbox, dir)
	if err != nil {
		return nil, err
	}
	cmd.Dir = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))
	cmd.Env = spec.Env(buildEnv(environ(), s.acct, shell, p.Env))
	master, err := startPTY(cmd, p.Cols, p.Rows)
	if err != nil {
		spec.Cleanup()
		return nil, rpc.Errorf(rpc.CodeInternalError, "spawn_failed", "start %s: %v", shell, err)
	}
	s.cfg.Logger.Info("terminal started", "terminal_id", id, "pid", cmd.Process.Pid, "shell", shell, "sandbox", applied.Level)
	return s.newTerm(id, cmd, master, p.Cols, p.Rows, applied, s.cleanupOf(id, spec)), nil
}

// newTerm is the terminal of cmd, started on master.
func (s *Service) newTerm(id string, cmd *exec.Cmd, master *os.File, cols, rows int, applied protocol.SandboxInfo, cleanup func()) *term {
	return &term{
		id: id, cfg: &s.cfg, cmd: cmd, master: master,
		inputC: make(chan []byte, 64),
		exited: make(chan struct{}), hupC: make(chan struct{}),
		readDone: make(chan struct{}), done: make(chan struct{}),
		ring: newRing(s.cfg.Scrollback), cols: cols, rows: rows,
		sandbox: applied, cleanup: cleanup,
	}
}

// run starts the terminal's goroutines. unlist runs just before
// terminal_exit is sent, gone once everything the terminal started has
// returned.
func (t *term) run(hold Holder, unlist, gone func()) {
	release := func() {}
	if hold != nil {
		release = hold.Hold()
	}
	t.wg.Add(3)
	go t.wait()
	go t.write()
	go t.killer()
	go func() {
		t.read()
		t.finish(unlist)
		t.wg.Wait()
		release()
		gone()
	}()
}

// wait reaps the shell, then hangs up what it left behind in its
// session, as closing a terminal does. The reader gets until SIGKILL (and
// a second more) to see the end of the output.
func (t *term) wait() {
	defer t.wg.Done()
	_ = t.cmd.Wait()
	t.cleanup()
	close(t.exited)
	t.terminate()
	_ = t.master.SetReadDeadline(time.Now().Add(t.cfg.KillGrace + time.Second))
}

// terminate sends SIGHUP to every process in the terminal's session;
// the killer sends SIGKILL after KillGrace to whatever is left.
func (t *term) terminate() {
	t.hupOnce.Do(func() {
		signalSession(t.cmd.Process.Pid, syscall.SIGHUP)
		close(t.hupC)
	})
}

func (t *term) killer() {
	defer t.wg.Done()
	select {
	case <-t.hupC:
	case <-t.readDone:
		return
	}
	timer := time.NewTimer(t.cfg.KillGrace)
	defer timer.Stop()
	select {
	case <-timer.C:
		signalSession(t.cmd.Process.Pid, syscall.SIGKILL)
	case <-t.readDone:
	}
}

// write passes input to the program, in order.
func (t *term) write() {
	defer t.wg.Done()
	for {
		select {
		case b := <-t.inputC:
			_, _ = t.master.Write(b)
		case <-t.done:
			return
		}
	}
}

// input queues data for the program; it waits only while the queue is
// full, which pushes back on the sender.
// control resizes or terminates the terminal for a client, whichever
// route it came by (a handed-off raw stream, resize_terminal,
// terminate_terminal); keystrokes go by input or, on a raw stream, straight
// to the master.
func (t *term) control(c rawframe.Control) error {
	switch {
	case c.Terminate:
		t.terminate()
	case c.Cols > 0:
		return t.setSize(c.Cols, c.Rows)
	}
	return nil
}

func (t *term) input(data []byte) {
	if len(data) == 0 {
		return
	}
	select {
	case t.inputC <- data:
	case <-t.done:
	}
}

// pipeDepth is how many PTY reads may wait for the sender: reading goes
// on while a chunk is encoded and sent, and bounded, so a stalled
// connection still stops the program.
const pipeDepth = 8

// inlineMax is the longest read the reader writes to a raw stream
// itself; bulk output (the PTY gives reads of 3-4 KiB) goes through send,
// which joins reads into fewer, larger writes.
const inlineMax = 1024

// read forwards output until the PTY reports that every process has
// closed it (EIO), or the deadline set after the shell's exit passes.
// One goroutine reads, another (send) encodes and sends, so the program
// is not held up by the encoding of its last write.
func (t *term) read() {
	chunks := make(chan []byte, pipeDepth)
	free := make(chan []byte, pipeDepth)
	for range pipeDepth {
		free <- make([]byte, ChunkSize)
	}
	sent := make(chan struct{})
	var queued atomic.Int64 // chunks handed to send, not yet emitted
	go func() { defer close(sent); t.send(chunks, free, &queued) }()
	defer func() { close(chunks); <-sent; close(t.readDone) }()
	for {
		buf := <-free
		n, err := t.master.Read(buf)
		switch {
		case n > 0 && n < inlineMax && queued.Load() == 0 && t.rawAttached():
			// A short read (an echo, a prompt) for a raw stream has
			// nothing to encode or join: written from here it is spared
			// a handoff; send has nothing older left, so the order holds.
			t.emit(buf[:n])
			free <- buf
		case n > 0:
			queued.Add(1)
			chunks <- buf[:n]
		default:
			free <- buf
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.drain(chunks, free, &queued)
			return
		}
		if err != nil {
			return
		}
	}
}

// drain takes what is already buffered when the deadline passed (a
// process that left the session may still hold the PTY open).
func (t *term) drain(chunks, free chan []byte, queued *atomic.Int64) {
	for range 64 {
		_ = t.master.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		buf := <-free
		n, err := t.master.Read(buf)
		if n > 0 {
			queued.Add(1)
			chunks <- buf[:n]
		} else {
			free <- buf
		}
		if err != nil {
			return
		}
	}
}

// send emits the reads in order, joining those already waiting into
// chunks of up to ChunkSize: fewer, larger notifications. For a raw
// stream in bulk it also waits up to joinWait for the next read, since
// each write costs the daemon and the client a wakeup and two copies.
func (t *term) send(chunks <-chan []byte, free chan<- []byte, queued *atomic.Int64) {
	out := make([]byte, 0, ChunkSize)
	j := joiner{chunks: chunks, timer: time.NewTimer(time.Hour)}
	j.timer.Stop()
	for c := range chunks {
		out = append(out[:0], c...)
		free <- c[:cap(c)]
		k := int64(1) // chunks in out
		for len(out) < ChunkSize {
			c, ok := j.next(len(out) >= inlineMax && t.rawAttached())
			if !ok {
				break
			}
			if len(out)+len(c) > ChunkSize {
				t.emit(out)
				queued.Add(-k)
				out, k = out[:0], 0
			}
			out = append(out, c...)
			free <- c[:cap(c)]
			k++
		}
		t.emit(out)
		queued.Add(-k)
	}
}

// joinWait is how long bulk output for a raw stream waits for more: the
// PTY gives a read of 3-4 KiB every few tens of µs while a program
// writes fast, and a person does not see a quarter of a millisecond.
const joinWait = 250 * time.Microsecond

type joiner struct {
	chunks <-chan []byte
	timer  *time.Timer
}

// next returns a read already waiting, or, if wait, one that comes within
// joinWait; false when there is none (or no more).
func (j *joiner) next(wait bool) ([]byte, bool) {
	select {
	case c, ok := <-j.chunks:
		return c, ok
	default:
	}
	if !wait {
		return nil, false
	}
	j.timer.Reset(joinWait)
	defer j.timer.Stop()
	select {
	case c, ok := <-j.chunks:
		return c, ok
	case <-j.timer.C:
		return nil, false
	}
}

func (t *term) rawAttached() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw != nil
}

// emit keeps a chunk in the scrollback and sends it to the raw stream
// when one is attached (a write that waits for its reader: backpressure),
// else to the attached connection, once its attach reply has gone out.
func (t *term) emit(data []byte) {
	t.outMu.Lock()
	t.mu.Lock()
	t.ring.Write(data)
	t.off += int64(len(data))
	seq := t.seq
	t.seq++
	conn, gate, raw := t.conn, t.gate, t.raw
	if t.exitOnly {
		conn = nil
	}
	t.mu.Unlock()
	if raw != nil {
		if _, err := raw.Write(data); err != nil {
			t.detachRaw(raw)
		}
		t.outMu.Unlock()
		return
	}
	t.outMu.Unlock()
	if conn == nil || !opened(gate, conn) {
		return
	}
	_ = conn.Notify(protocol.MethodTerminalOutput, protocol.TerminalOutput{TerminalID: t.id, Seq: seq, Data: data})
}

// opened waits for gate; false when conn ended first.
func opened(gate chan struct{}, conn *rpc.Conn) bool {
	select {
	case <-gate:
		return true
	case <-conn.Done():
		return false
	}
}

// finish reports the exit after the last output and stops the helpers.
func (t *term) finish(unlist func()) {
	<-t.exited
	t.outMu.Lock() // an attachRaw replaying finishes first
	t.mu.Lock()
	t.finished = true
	conn, gate, raw := t.conn, t.gate, t.raw
	t.raw = nil
	if t.grace != nil {
		t.grace.Stop()
	}
	t.mu.Unlock()
	t.outMu.Unlock()
	ex := exitOf(t.id, t.cmd.ProcessState)
	if raw != nil { // after the last output: its reader sees the end
		endExited(raw, ex)
	}
	_ = t.master.Close() // after finished is set: setSize holds mu while it uses the master
	t.cfg.Logger.Info("terminal exited", "terminal_id", t.id, "exit_code", ex.ExitCode, "signal", ex.Signal)
	if t.exit != nil {
		t.exit <- ex // buffered: its program's owner reads it when it will
	}
	unlist()
	if conn != nil && opened(gate, conn) {
		_ = conn.Notify(protocol.MethodTerminalExit, ex)
	}
	close(t.done)
}

func exitOf(id string, ps *os.ProcessState) protocol.TerminalExit {
	ex := protocol.TerminalExit{TerminalID: id, ExitCode: -1}
	if ps == nil {
		return ex
	}
	st, _ := ps.Sys().(syscall.WaitStatus)
	ex.ExitCode = st.ExitStatus()
	if st.Signaled() {
		ex.ExitCode, ex.Signal = -1, st.Signal().String()
	}
	return ex
}

func (t *term) setSize(cols, rows int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished { // the master is closed
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "terminal %q has exited", t.id)
	}
	sc, err := t.master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return err
	}
	t.cols, t.rows = cols, rows
	return nil
}

func (t *term) info() protocol.TerminalInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return protocol.TerminalInfo{TerminalID: t.id, PID: t.cmd.Process.Pid, Cols: t.cols, Rows: t.rows, Attached: t.attachedLocked()}
}
