// Package rpc implements symmetric JSON-RPC 2.0 over newline-delimited
// JSON: either end of a [Conn] sends requests, notifications and
// responses, one message (or batch) per line.
//
// # Concurrency model
//
// The shape is containerd/ttrpc's: one reader, one write path, a map of
// pending calls.
//
// Reading. [Conn.Serve] runs the connection's only read loop. It splits
// lines (a line past [Options.MaxLine] is skipped as it streams by, never
// buffered whole, and answered with an error), decodes each, and then:
//
//   - a response to one of our calls is handed to the waiting [Conn.Call]
//     through its channel in the pending map;
//   - a notification's handler runs right there, on the loop;
//   - a request takes a slot of [Options.MaxInFlight] (none left: it is
//     answered at once with [CodeLimitReached], reason too_many_requests)
//     and its handler runs on a goroutine of its own, so requests are
//     handled concurrently. A [Mux] method registered with
//     [Mux.RegisterInline] runs on the loop instead, saving the goroutine;
//     it must return in microseconds and never wait.
//
// Because the loop delivers notifications and responses itself, in the
// order they were read, the peer's notifications are handled in the order
// sent, and the result of a call never overtakes the notifications sent
// before it. It also means a notification handler must not wait on a call
// over the same connection (its response could not be read), and that a
// slow notification handler pushes back on the sender through the socket.
//
// Writing. Every message is encoded outside the lock, then written into
// one buffered writer under a mutex. Whoever writes last, with no other
// writer waiting for the mutex, sees that the buffer is flushed, so
// concurrent messages leave in few system calls: a call or a handler's
// reply flushes at once; a notification leaves the flush to a flusher
// goroutine, so a stream of them goes out in large writes; a reply written
// by the read loop itself is flushed before the loop next waits for input
// (or runs a notification handler, which may be slow), so the replies to
// a burst of pipelined requests leave together.
// Notifications sent by one goroutine arrive in the order sent.
//
// Cancellation. When the context of [Conn.Call] ends first, the call is
// forgotten, the peer is sent $/cancelRequest {id} and Call returns the
// context's error. A $/cancelRequest from the peer cancels the context of
// that request's handler, whose reply is then "request cancelled" unless
// the handler says otherwise.
//
// Closing. [Conn.Close] flushes what is buffered (for up to a second) and
// closes the connection; the peer closing has the same effect. Either way
// every pending call fails at once with [ErrClosed], every handler's
// context is cancelled, and Serve returns once the handlers have.
//
// # Foreign peers
//
// The zero [Options] speak strict JSON-RPC 2.0 as the protocol requires:
// text that is not JSON gets -32700 with id null, JSON that is no message
// gets -32600. [Options.Lenient], [Options.Bare] and [Options.OnLine] adapt
// a Conn to peers that print stray lines, omit "jsonrpc", or whose lines
// must be recorded or redacted, such as agent CLIs spoken to over a pipe.
package rpc
