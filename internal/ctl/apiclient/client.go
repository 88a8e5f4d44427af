// Package apiclient is a client of agor-daemon's HTTP API on its Unix
// socket (/run/agor/daemon.sock): plain calls, the streamed prompt, a
// task's events resumed by sequence number, and a terminal's upgraded
// stream. The daemon knows the caller by SO_PEERCRED, so there is nothing
// to log in with.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// DefaultSocket is where agor-daemon.socket listens.
const DefaultSocket = "/run/agor/daemon.sock"

// SocketEnv names the environment variable that overrides DefaultSocket.
const SocketEnv = "AGOR_SOCKET"

// maxReply bounds a reply read whole.
const maxReply = 64 << 20

// ErrUnavailable wraps every failure to reach the daemon at all.
var ErrUnavailable = errors.New("daemon unavailable")

// Socket is the API socket to use: $AGOR_SOCKET, else DefaultSocket.
func Socket() string {
	if v := os.Getenv(SocketEnv); v != "" {
		return v
	}
	return DefaultSocket
}

// Client talks HTTP to the daemon over its Unix socket.
type Client struct {
	socket string
	http   *http.Client
	// Environment is where exec and terminals run ("": the daemon's
	// default; "host": the host), sent as ?environment= on their routes.
	// Prompts carry theirs in the body.
	Environment string
}

// envPath adds ?environment= to an executor route's path (which has no
// query of its own yet, or one starting with '?').
func (c *Client) envPath(path string) string {
	if c.Environment == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "environment=" + url.QueryEscape(c.Environment)
}

// New returns a client of the daemon listening on socket; it connects
// on its first call.
func New(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	return &Client{socket: socket, http: &http.Client{Transport: tr}}
}

// Socket is the path this client dials.
func (c *Client) Socket() string { return c.socket }

// Error is the daemon's JSON error, with the HTTP status it came with.
type Error struct {
	Status int
	apiwire.ErrorDetail
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Reason) }

// Do sends body as JSON (nil: none) and decodes a 2xx reply into out
// (nil: discarded; *json.RawMessage: kept as sent).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := replyError(resp); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return fmt.Errorf("read %s %s: %w", method, path, err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Open sends the request and returns the 2xx reply unread, for streams;
// the caller closes its body.
func (c *Client) Open(ctx context.Context, method, path string, body any) (*http.Response, error) {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if err := replyError(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.sendWith(ctx, method, path, body, nil)
}

// sendWith is send with extra request headers (nil: none).
func (c *Client) sendWith(ctx context.Context, method, path string, body any, hdr http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agor"+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &unavailableError{socket: c.socket, err: err}
	}
	return resp, nil
}

// unavailableError is a failure to reach the daemon; it is ErrUnavailable
// and the cause (a context's error among them).
type unavailableError struct {
	socket string
	err    error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("daemon at %s: %v (is agor-daemon running?)", e.socket, e.err)
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// replyError is the daemon's error for a non-2xx reply, or nil.
func replyError(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var e apiwire.ErrorBody
	if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
		return fmt.Errorf("daemon: %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	return &Error{Status: resp.StatusCode, ErrorDetail: e.Error}
}
