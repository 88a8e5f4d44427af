package rpc

import "log/slog"

// DefaultMaxLine is the longest line either side accepts: 1 MiB.
const DefaultMaxLine = 1 << 20

// Options tune a connection. The zero value gives the documented defaults,
// and a strict JSON-RPC 2.0 peer.
type Options struct {
	// MaxLine is the longest line read or written, in bytes (default 1 MiB).
	MaxLine int
	// MaxInFlight bounds the peer's requests handled at once (default 64).
	// Past it a request is answered at once with CodeLimitReached: blocking
	// the reader instead could deadlock two peers that call each other.
	MaxInFlight int
	// QueueLen is no longer used: the read loop delivers notifications and
	// responses itself, so a slow notification handler pushes back on the
	// sender through the socket at once. The field is kept so that option
	// literals that set it still compile.
	QueueLen int
	// Logger receives protocol-level warnings (default: slog.Default()).
	Logger *slog.Logger

	// Lenient tolerates a peer that is not strict JSON-RPC 2.0, such as an
	// agent CLI on a pipe. A line that is not JSON, and JSON that is no
	// message and has no id to answer, is logged at debug level and
	// skipped instead of answered with -32700 or -32600; messages without
	// "jsonrpc" are accepted; and the response to one of our calls is
	// matched whether the peer echoes its id as the number we sent or as a
	// string of it.
	Lenient bool
	// Bare leaves "jsonrpc":"2.0" out of every message sent, for peers
	// whose dialect omits it (codex app-server).
	Bare bool
	// OnLine, when set, sees every line read (without its newline) before
	// it is decoded, on the read loop, so it must be quick. It returns the
	// line to decode: the same slice to only observe it, a rewritten one
	// (say, with a secret redacted), or nil to skip it. The slice it is
	// given is valid only during the call.
	OnLine func(line []byte) []byte
}

func (o *Options) setDefaults() {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}
