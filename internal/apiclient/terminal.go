package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"

	"github.com/agor-sh/agor/internal/apiwire"
	"github.com/agor-sh/agor/internal/protocol"
)

// SpawnTerminal starts a terminal in user's executor and returns its id.
func (c *Client) SpawnTerminal(ctx context.Context, user string, p protocol.SpawnTerminalParams) (string, error) {
	var res struct {
		TerminalID string `json:"terminal_id"`
	}
	if err := c.Do(ctx, "POST", "/v1/executors/"+url.PathEscape(user)+"/terminals", p, &res); err != nil {
		return "", err
	}
	return res.TerminalID, nil
}

// Terminal is an attached terminal: a two-way stream of apiwire.Frame
// lines over an upgraded connection to the daemon.
type Terminal struct {
	conn net.Conn
	rd   *bufio.Reader
	mu   sync.Mutex // around enc: keys and resizes come from two goroutines
	enc  *json.Encoder
}

// AttachTerminal upgrades a request on the daemon's socket to terminal
// id's stream; the caller closes it.
func (c *Client) AttachTerminal(ctx context.Context, user, id string) (*Terminal, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, &unavailableError{socket: c.socket, err: err}
	}
	path := "/v1/executors/" + url.PathEscape(user) + "/terminals/" + url.PathEscape(id) + "/attach"
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n", path)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		if err := replyError(resp); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("attach: %s", resp.Status)
	}
	return &Terminal{conn: conn, rd: rd, enc: json.NewEncoder(conn)}, nil
}

// Send sends one frame: input, a resize, detach or terminate.
func (t *Terminal) Send(f apiwire.Frame) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.enc.Encode(f)
}

// Close drops the connection; the terminal runs on in its executor.
func (t *Terminal) Close() error { return t.conn.Close() }

// Copy writes the terminal's output to w until it exits, and returns its
// exit status as a shell reports it, or until the stream ends (an error).
func (t *Terminal) Copy(w io.Writer) (int, error) {
	dec := json.NewDecoder(t.rd)
	for {
		var f struct {
			apiwire.Frame
			Error string `json:"error"`
		}
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return 0, errors.New("the daemon closed the terminal's stream")
			}
			return 0, err
		}
		switch {
		case f.Error != "":
			return 0, errors.New(f.Error)
		case f.Exit != nil:
			return ExitStatus(f.Exit), nil
		case len(f.Output) > 0:
			if _, err := w.Write(f.Output); err != nil {
				return 0, err
			}
		}
	}
}

// ExitStatus is a terminal's exit as a shell reports it: 128+N when
// signal N ended it.
func ExitStatus(e *protocol.TerminalExit) int {
	if e.Signal == "" {
		return e.ExitCode
	}
	for n := syscall.Signal(1); n < 65; n++ {
		if n.String() == e.Signal {
			return 128 + int(n)
		}
	}
	return 128 + int(syscall.SIGHUP)
}
