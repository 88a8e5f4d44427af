package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a connection. The zero value gives the documented defaults.
type Options struct {
	// MaxLine is the longest line read or written, in bytes (default 1 MiB).
	MaxLine int
	// MaxInFlight bounds the peer's requests handled at once (default 64).
	// Past it a request is answered at once with CodeLimitReached: blocking
	// the reader instead could deadlock two peers that call each other.
	MaxInFlight int
	// QueueLen bounds notifications and responses waiting for their turn
	// (default 1024); a full queue stops reading, which pushes back on the
	// sender through the socket.
	QueueLen int
	// Logger receives protocol-level warnings (default: slog.Default()).
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Conn is one end of a symmetric JSON-RPC 2.0 connection over
// newline-delimited JSON: either side sends requests, notifications and
// responses. Handlers for the peer's requests run concurrently; its
// notifications, and the responses to our calls, are delivered in the
// order they were sent, so a result never overtakes the events before it.
type Conn struct {
	rwc     io.ReadWriteCloser
	handler Handler
	opts    Options
	log     *slog.Logger

	writeMu sync.Mutex
	w       *bufio.Writer
	writers atomic.Int32  // writes waiting or under way; the last one flushes
	flushC  chan struct{} // asks the flusher to flush deferred notifications

	nextID   atomic.Int64
	mu       sync.Mutex
	pending  map[string]chan *message      // our calls awaiting a response
	inflight map[string]context.CancelFunc // the peer's requests being handled
	closed   bool
	closeErr error

	// The reader role (see role.go): rd is held by whoever reads lr.
	rd          sync.Mutex
	lr          *lineReader
	rdErr       error           // why reading ended; guarded by rd
	serveCtx    context.Context // handlers' context; set by Serve, guarded by rd
	rdl         readDeadliner   // rwc's read deadline, when it has one
	rdC         chan struct{}   // wakes the loop to take the role
	rdTimer     *time.Timer     // wakes it after a quiet spell
	holder      atomic.Pointer[roleHolder]
	responded   atomic.Bool  // a response was delivered since the loop last looked
	freedAt     atomic.Int64 // when the role was last given up (Unix ns)
	armed       atomic.Bool  // rdTimer is running
	callerReads atomic.Bool  // a caller holds the role

	queue   chan func() // ordered deliveries
	queued  atomic.Int64
	slots   chan struct{} // in-flight request bound
	done    chan struct{}
	handled sync.WaitGroup
}

// NewConn wraps rwc. Nothing is read until Serve is called.
func NewConn(rwc io.ReadWriteCloser, h Handler, opts Options) *Conn {
	opts.setDefaults()
	if h == nil {
		h = NewMux()
	}
	c := &Conn{
		rwc:      rwc,
		handler:  h,
		opts:     opts,
		log:      opts.Logger,
		w:        bufio.NewWriterSize(rwc, 64<<10),
		pending:  make(map[string]chan *message),
		inflight: make(map[string]context.CancelFunc),
		queue:    make(chan func(), opts.QueueLen),
		slots:    make(chan struct{}, opts.MaxInFlight),
		done:     make(chan struct{}),
		flushC:   make(chan struct{}, 1),
		rdC:      make(chan struct{}, 1),
	}
	c.rdl, _ = rwc.(readDeadliner)
	c.lr = newLineReader(connReader{c}, opts.MaxLine)
	c.rdTimer = time.AfterFunc(time.Hour, c.quiet)
	c.rdTimer.Stop()
	c.rd.Lock() // the role is Serve's until it first gives it up
	return c
}

// Serve reads and dispatches until the connection ends, then fails every
// pending call, cancels every handler and waits for them. Handler contexts
// derive from ctx, so values put there (such as the peer's credentials)
// reach every handler. It returns nil when the peer closed cleanly or
// Close was called.
func (c *Conn) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ordered sync.WaitGroup
	ordered.Add(2)
	go func() { defer ordered.Done(); c.deliver() }()
	go func() { defer ordered.Done(); c.flusher() }()

	c.serveCtx = ctx
	err := c.readLoop(ctx)
	c.rdTimer.Stop()
	c.shutdown(err)
	cancel()
	close(c.queue)
	ordered.Wait()
	c.handled.Wait()
	if c.isClosedErr(err) {
		return nil
	}
	return err
}

func (c *Conn) isClosedErr(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, ErrClosed) || c.closedByUs()
}

func (c *Conn) closedByUs() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Is(c.closeErr, ErrClosed)
}

// Close ends the connection; pending calls fail with ErrClosed.
// Notifications still buffered are flushed first, for up to a second.
func (c *Conn) Close() error {
	if !c.isClosed() {
		c.writeMu.Lock()
		if d, ok := c.rwc.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Now().Add(time.Second))
		}
		_ = c.w.Flush()
		c.writeMu.Unlock()
	}
	c.shutdown(ErrClosed)
	return nil
}

// Done is closed once the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// InFlight counts the peer's requests being handled now.
func (c *Conn) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

func (c *Conn) shutdown(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if cause == nil {
		cause = io.EOF
	}
	c.closeErr = cause
	pending := c.pending
	c.pending = map[string]chan *message{}
	cancels := make([]context.CancelFunc, 0, len(c.inflight))
	for _, cancel := range c.inflight {
		cancels = append(cancels, cancel)
	}
	c.mu.Unlock()
	close(c.done)
	_ = c.rwc.Close() // first, so no cancelled handler's reply goes out
	for _, cancel := range cancels {
		cancel()
	}
	for _, ch := range pending {
		close(ch) // a closed channel tells the caller the connection ended
	}
}

func (c *Conn) readOne(ctx context.Context, line []byte) {
	m, perr := decode(line)
	if perr != nil {
		c.replyError(m, perr)
		return
	}
	if resp := c.dispatch(ctx, m, nil); resp != nil {
		c.send(resp)
	}
}

// replyError answers a message that could not be decoded; id null when
// no id could be recovered.
func (c *Conn) replyError(m *message, e *Error) {
	id := nullID
	if m != nil && m.ID != nil {
		id = m.ID
	}
	c.send(&message{JSONRPC: version, ID: id, Error: e})
}

// dispatch routes one decoded message. For a request it starts the handler
// and, when batch is nil, the handler sends its own response; inside a batch
// the response goes to batch instead. A non-nil return is an immediate reply.
func (c *Conn) dispatch(ctx context.Context, m *message, batch *batchReply) *message {
	k, verr := m.classify()
	switch k {
	case kindInvalid:
		id := m.ID
		if id == nil || !validID(id) {
			id = nullID
		}
		return &message{JSONRPC: version, ID: id, Error: verr}
	case kindResponse:
		c.enqueue(func() { c.complete(m) })
	case kindNotification:
		c.notification(ctx, m)
	case kindRequest:
		return c.request(ctx, m, batch)
	}
	return nil
}

// enqueue runs f on the ordered delivery goroutine. When nothing is queued,
// f runs here at once: the order is the same and a hop is saved.
func (c *Conn) enqueue(f func()) {
	if c.queued.Load() == 0 {
		f()
		return
	}
	c.queued.Add(1)
	c.queue <- f
}

func (c *Conn) deliver() {
	for f := range c.queue {
		f()
		c.queued.Add(-1)
	}
}

func (c *Conn) notification(ctx context.Context, m *message) {
	if m.Method == cancelMethod {
		c.cancelInflight(m.Params)
		return
	}
	req := &Request{Method: m.Method, Params: m.Params, Notification: true, Conn: c}
	c.queued.Add(1) // notifications always take the queue: handlers may be slow
	c.queue <- func() {
		if _, err := c.handler.Handle(ctx, req); err != nil {
			c.log.Debug("notification handler failed", "method", m.Method, "err", err)
		}
	}
}

const cancelMethod = "$/cancelRequest"

func (c *Conn) cancelInflight(params json.RawMessage) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(params, &p) != nil || p.ID == nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[idKey(p.ID)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *Conn) request(ctx context.Context, m *message, batch *batchReply) *message {
	select {
	case c.slots <- struct{}{}:
	default:
		return &message{JSONRPC: version, ID: m.ID, Error: Errorf(CodeLimitReached, "too_many_requests",
			"too many requests in flight (limit %d)", c.opts.MaxInFlight)}
	}
	key := idKey(m.ID)
	hctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup || c.closed {
		c.mu.Unlock()
		cancel()
		<-c.slots
		return &message{JSONRPC: version, ID: m.ID, Error: Errorf(CodeInvalidRequest, "duplicate_id",
			"invalid request: id %s is already in flight", key)}
	}
	c.inflight[key] = cancel
	c.mu.Unlock()
	batch.add()
	c.handled.Add(1)
	if in, ok := c.handler.(Inliner); ok && in.Inline(m.Method) {
		c.run(hctx, cancel, key, m, batch) // saves a goroutine hand-off
		return nil
	}
	go c.run(hctx, cancel, key, m, batch)
	return nil
}

func (c *Conn) run(ctx context.Context, cancel context.CancelFunc, key string, m *message, batch *batchReply) {
	defer c.handled.Done()
	resp := c.handle(ctx, m)
	<-c.slots // the handler is done: a caller may start another now
	// The reply leaves before the request stops counting as in flight, so
	// a server that drains in-flight work before closing never cuts it off.
	if batch != nil {
		batch.put(resp)
	} else {
		c.send(resp)
	}
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	cancel()
}

// handle runs the handler, turning panics and errors into error replies.
func (c *Conn) handle(ctx context.Context, m *message) (resp *message) {
	resp = &message{JSONRPC: version, ID: m.ID}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", m.Method, "panic", fmt.Sprint(p))
			resp.Result, resp.Error = nil, Errorf(CodeInternalError, "internal_error", "internal error in %s", m.Method)
		}
	}()
	res, err := c.handler.Handle(ctx, &Request{Method: m.Method, Params: m.Params, Conn: c})
	if err != nil {
		resp.Error = toError(ctx, err)
		return resp
	}
	raw, err := marshalResult(res)
	if err != nil {
		resp.Error = Errorf(CodeInternalError, "internal_error", "encode result of %s: %v", m.Method, err)
		return resp
	}
	resp.Result = raw
	return resp
}

func marshalResult(res any) (json.RawMessage, error) {
	switch r := res.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		return compactRaw(r)
	}
	return json.Marshal(res)
}

// toError maps a handler's error to what the peer is told.
func toError(ctx context.Context, err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return Errorf(CodeRequestCancelled, "cancelled", "request cancelled")
	}
	return Errorf(CodeInternalError, "internal_error", "%v", err)
}

// complete hands a response to the call waiting for it.
func (c *Conn) complete(m *message) {
	key := idKey(m.ID)
	c.mu.Lock()
	ch := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	c.responded.Store(true)
	if ch == nil {
		c.log.Debug("response to no pending call", "id", key)
		return
	}
	ch <- m
}

// rejectLong answers a line that went past the limit, as well as can be
// told from its start: the caller's pending call fails, a notification is
// dropped with a log line, anything else gets an error with id null.
func (c *Conn) rejectLong(prefix []byte) {
	s := sniff(prefix)
	e := Errorf(CodeLimitReached, "message_too_large", "message exceeds the %d-byte line limit", c.opts.MaxLine)
	e.Data["limit"] = c.opts.MaxLine
	switch {
	case s.id != nil && !s.isMethod && c.hasPending(s.id):
		c.enqueue(func() { c.complete(&message{JSONRPC: version, ID: s.id, Error: e}) })
	case s.id != nil:
		c.send(&message{JSONRPC: version, ID: s.id, Error: e})
	case s.isMethod:
		c.log.Warn("dropped over-long notification", "limit", c.opts.MaxLine)
	default:
		c.send(&message{JSONRPC: version, ID: nullID, Error: e})
	}
}

func (c *Conn) hasPending(id json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[idKey(id)]
	return ok
}

// send writes a reply; failures mean the connection is ending, which the
// read loop notices.
func (c *Conn) send(m *message) {
	if err := c.write(m, false); err != nil && !errors.Is(err, ErrClosed) {
		c.log.Debug("write reply failed", "err", err)
	}
}

// write encodes m as one line. The last of several concurrent writers
// flushes, so a burst of messages leaves in few system calls. A deferred
// write (a notification) leaves the flush to the flusher goroutine: a
// stream of notifications then goes out in large writes, while calls and
// replies, which someone waits for, flush at once (and carry any
// notification before them, in order).
func (c *Conn) write(m any, deferFlush bool) error {
	b, err := encode(m)
	if err != nil {
		return err
	}
	defer putBuf(b)
	if len(*b)-1 > c.opts.MaxLine {
		return fmt.Errorf("%w (%d > %d bytes)", ErrTooLarge, len(*b)-1, c.opts.MaxLine)
	}
	c.writers.Add(1)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.w.Write(*b)
	if c.writers.Add(-1) == 0 && err == nil {
		if deferFlush {
			c.requestFlush()
		} else {
			err = c.w.Flush()
		}
	}
	if err != nil {
		c.shutdown(fmt.Errorf("rpc: write: %w", err))
		return ErrClosed
	}
	return nil
}

func (c *Conn) requestFlush() {
	select {
	case c.flushC <- struct{}{}:
	default: // a flush is already due
	}
}

// flusher writes out deferred notifications until the connection ends.
func (c *Conn) flusher() {
	for {
		select {
		case <-c.done:
			return
		case <-c.flushC:
		}
		c.writeMu.Lock()
		err := c.w.Flush()
		c.writeMu.Unlock()
		if err != nil {
			c.shutdown(fmt.Errorf("rpc: write: %w", err))
			return
		}
	}
}

// Notify sends a notification. Notifications sent by one goroutine arrive
// in the order sent.
func (c *Conn) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if c.isClosed() {
		return ErrClosed
	}
	return c.write(&message{JSONRPC: version, Method: method, Params: raw}, true)
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw, err := compactRaw(p)
		if err != nil {
			return nil, fmt.Errorf("rpc: params: %w", err)
		}
		return raw, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("rpc: encode params: %w", err)
	}
	return raw, nil
}

// Call sends a request and waits for its response, decoding the result
// into result (which may be nil). When ctx ends first, the peer is sent
// $/cancelRequest and Call returns ctx's error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	key := idKey(id)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("call %s: %w", method, ErrClosed)
	}
	c.pending[key] = ch
	c.mu.Unlock()

	if err := c.write(&message{JSONRPC: version, ID: id, Method: method, Params: raw}, false); err != nil {
		c.forget(key)
		return fmt.Errorf("call %s: %w", method, err)
	}
	if c.rd.TryLock() {
		if m, ok, got := c.readFor(ctx, ch); got {
			return c.result(method, m, ok, result)
		}
	}
	return c.wait(ctx, method, id, ch, result)
}

func (c *Conn) wait(ctx context.Context, method string, id json.RawMessage, ch chan *message, result any) error {
	select {
	case m, ok := <-ch:
		return c.result(method, m, ok, result)
	case <-ctx.Done():
		c.forget(idKey(id))
		_ = c.Notify(cancelMethod, map[string]json.RawMessage{"id": id})
		return ctx.Err()
	}
}

// result decodes a response received from ch (ok false: ch was closed).
func (c *Conn) result(method string, m *message, ok bool, result any) error {
	if !ok {
		return fmt.Errorf("call %s: %w", method, c.endErr())
	}
	if m.Error != nil {
		return m.Error
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("call %s: decode result: %w", method, err)
	}
	return nil
}

func (c *Conn) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
}

// endErr wraps ErrClosed with the reason the connection ended.
func (c *Conn) endErr() error {
	err := c.Err()
	if err == nil || errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %v", ErrClosed, err)
}

// bufs recycles encoding buffers: a stream of notifications otherwise
// makes garbage at the rate it sends.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 { // do not keep a rare large buffer alive
		*b = (*b)[:0]
		bufs.Put(b)
	}
}

// encode returns m as one line, newline included, in a pooled buffer.
func encode(m any) (*[]byte, error) {
	b := bufs.Get().(*[]byte)
	var err error
	if one, ok := m.(*message); ok {
		*b, err = appendMessage(*b, one)
	} else {
		var raw []byte
		raw, err = json.Marshal(m)
		*b = append(*b, raw...)
	}
	if err != nil {
		putBuf(b)
		return nil, fmt.Errorf("rpc: encode: %w", err)
	}
	*b = append(*b, '\n')
	return b, nil
}
