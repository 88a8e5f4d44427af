package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// Grant is what a token stands for: whose call it is, and where and with
// which key to make it.
type Grant struct {
	Person, Task, Session, Agent string
	// API is the API Key is for; it must be the API asked about (the
	// gateway refuses a grant for another, so a key never goes to a
	// provider it is not for).
	API      API
	Key      string
	Upstream *url.URL // the provider's base URL; its path is kept as a prefix
	// Own: the client signs in with its person's own subscription, whose
	// credentials pass through untouched; Key is empty.
	Own bool
}

// Authorizer checks a presented token for a call to api. A *Refusal
// error is shown to the client as it says; any other error is a 401 with
// a generic message.
type Authorizer interface {
	Authorize(ctx context.Context, api API, token string) (Grant, error)
}

// OwnAuthorizer is an Authorizer that also takes requests signed in with
// the person's own subscription (under OwnPrefix): the token, from the
// path, is checked as by Authorize, and the grant has no key. upstream
// names the upstream when it is not api's own ("" when it is).
type OwnAuthorizer interface {
	Authorizer
	AuthorizeOwn(ctx context.Context, api API, upstream, token string) (Grant, error)
}

// Entry is the record of one forwarded request.
type Entry struct {
	Person, Task, Session, Agent string
	API                          API
	Model                        string // from the body's model field, or the Gemini path
	Usage                        Usage  // from the provider's response
	Streamed                     bool   // a stream: SSE, or Gemini's streamGenerateContent
	Own                          bool   // made with the person's own subscription
	// Status is the HTTP status the client was sent: the provider's, or
	// the gateway's own 502; 0 when the client left before any.
	Status         int
	Started, Ended time.Time
	// Err says why the exchange did not end whole (the provider
	// unreachable, the client gone, the stream cut); the Usage is then
	// what was seen. "" when whole.
	Err string
}

// Recorder takes the Entry of each forwarded request, once the response
// has ended. It is called on the request's goroutine: it should not
// block for long.
type Recorder interface {
	Record(Entry)
}

// Options tune New. The zero value is ready to use.
type Options struct {
	// Transport makes the upstream requests (one RoundTrip each: a
	// redirect is passed to the client, not followed with the key); nil:
	// a clone of http.DefaultTransport, which asks for and undoes gzip.
	Transport http.RoundTripper
	Log       *slog.Logger // nil: discard
	// MaxBody bounds a request body; 0: 32 MiB (Anthropic's own limit).
	MaxBody int64
	// MaxInFlight bounds each person's requests running at once (one
	// more is refused 429, which the CLIs retry); 0: DefaultMaxInFlight.
	MaxInFlight int
	// Door: a request's credential is the one its connection came with
	// (DoorListener, DoorContext), which the executor's relay put on for
	// the task whose process holds the agent's end; what the request
	// itself presents (the agent's key header, an own sign-in's path
	// token) decides nothing. Without it (tests, benches) what the
	// request presents is its credential.
	Door bool
}

// DefaultMaxBody is the request body bound when Options.MaxBody is 0.
const DefaultMaxBody = 32 << 20

// New returns the gateway's handler.
func New(auth Authorizer, rec Recorder, opts Options) http.Handler {
	g := &gateway{auth: auth, rec: rec, transport: opts.Transport, log: opts.Log, maxBody: opts.MaxBody,
		flights: newFlights(opts.MaxInFlight), door: opts.Door}
	if g.transport == nil {
		g.transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBody
	}
	return g
}

type gateway struct {
	auth      Authorizer
	rec       Recorder
	transport http.RoundTripper
	log       *slog.Logger
	maxBody   int64
	flights   *flights
	door      bool
}
