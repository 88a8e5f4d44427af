package rpc

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// Client is a Conn whose reading runs in the background from Dial until
// Close, which waits for it.
type Client struct {
	*Conn
	served chan error
	once   sync.Once
	err    error
}

// Dial connects to the Unix socket at path and starts serving the
// connection; h handles the peer's requests (nil: none are served).
func Dial(ctx context.Context, path string, h Handler, opts Options) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	return NewClient(nc, h, opts), nil
}

// NewClient serves an established connection (one an executor dialled
// in, say) as Dial serves the one it makes.
func NewClient(nc net.Conn, h Handler, opts Options) *Client {
	c := &Client{Conn: NewConn(nc, h, opts), served: make(chan error, 1)}
	go func() { c.served <- c.Conn.Serve(context.Background()) }()
	return c
}

// Close ends the connection and waits until it is fully shut down. It
// may be called more than once.
func (c *Client) Close() error {
	c.once.Do(func() {
		_ = c.Conn.Close()
		c.err = <-c.served
	})
	return c.err
}
