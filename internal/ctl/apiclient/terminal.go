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
	"strconv"
	"sync"
	"syscall"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rawframe"
)

// SpawnTerminal starts a terminal in user's executor and returns its id.
func (c *Client) SpawnTerminal(ctx context.Context, user string, p protocol.SpawnTerminalParams) (protocol.SpawnTerminalResult, error) {
	var res protocol.SpawnTerminalResult
	err := c.Do(ctx, "POST", c.envPath("/v1/executors/"+url.PathEscape(user)+"/terminals"), p, &res)
	return res, err
}

// Terminal is an attached terminal over an upgraded connection to the
// daemon: raw frames (rawframe.Upgrade), or, from
// AttachTerminalNDJSON, apiwire.Frame lines.
type Terminal struct {
	conn net.Conn
	rd   *bufio.Reader
	mu   sync.Mutex // around writes: keys and resizes come from two goroutines
	enc  *json.Encoder
	raw  bool
	// Offset is, in raw mode, the terminal's output offset of the next
	// byte Copy reads: AttachTerminalFrom resumes there.
	Offset int64
}

// AttachTerminal upgrades a request on the daemon's socket to terminal
// id's raw stream, from the start of its scrollback; the caller closes it.
func (c *Client) AttachTerminal(ctx context.Context, user, id string) (*Terminal, error) {
	return c.AttachTerminalFrom(ctx, user, id, 0)
}

// AttachTerminalFrom is AttachTerminal resuming at output offset (what an
// earlier Terminal's Offset reached), as far as the scrollback reaches.
func (c *Client) AttachTerminalFrom(ctx context.Context, user, id string, offset int64) (*Terminal, error) {
	return c.attachTerminal(ctx, user, id, rawframe.Upgrade, offset)
}

// AttachTerminalNDJSON attaches with the older stream of JSON lines,
// whose output is base64 in JSON.
func (c *Client) AttachTerminalNDJSON(ctx context.Context, user, id string) (*Terminal, error) {
	return c.attachTerminal(ctx, user, id, "agor-terminal", 0)
}

func (c *Client) attachTerminal(ctx context.Context, user, id, upgrade string, offset int64) (*Terminal, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, &unavailableError{socket: c.socket, err: err}
	}
	path := "/v1/executors/" + url.PathEscape(user) + "/terminals/" + url.PathEscape(id) + "/attach"
	if offset > 0 {
		path += "?offset=" + strconv.FormatInt(offset, 10)
	}
	path = c.envPath(path)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", path, upgrade)
	rd := bufio.NewReaderSize(conn, 64<<10) // a frame's header and payload in one read
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
	t := &Terminal{conn: conn, rd: rd, enc: json.NewEncoder(conn), raw: resp.Header.Get("Upgrade") == rawframe.Upgrade}
	t.Offset, _ = strconv.ParseInt(resp.Header.Get(rawframe.OffsetHeader), 10, 64)
	return t, nil
}

// Send sends one frame: input, a resize, detach or terminate.
func (t *Terminal) Send(f apiwire.Frame) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.raw {
		return t.enc.Encode(f)
	}
	switch {
	case f.Detach:
		return rawframe.Write(t.conn, rawframe.Detach, nil)
	case f.Terminate:
		return rawframe.Write(t.conn, rawframe.Terminate, nil)
	case f.Resize != nil:
		return rawframe.Write(t.conn, rawframe.Resize, rawframe.Size(f.Resize[0], f.Resize[1]))
	case len(f.Input) > 0:
		return rawframe.Write(t.conn, rawframe.Input, f.Input)
	}
	return nil
}

// Close drops the connection; the terminal runs on in its executor.
func (t *Terminal) Close() error { return t.conn.Close() }

// Copy writes the terminal's output to w until it exits, and returns its
// exit status as a shell reports it, or until the stream ends (an error).
func (t *Terminal) Copy(w io.Writer) (int, error) {
	if t.raw {
		return t.copyRaw(w)
	}
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
		case f.Error == rawframe.Replaced:
			return 0, ErrReplaced
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

// ErrReplaced ends Copy when another client attached to the terminal
// (rawframe.Replaced): it runs on there.
var ErrReplaced = errors.New(rawframe.Replaced)

func (t *Terminal) copyRaw(w io.Writer) (int, error) {
	var buf []byte
	for {
		typ, p, err := rawframe.Read(t.rd, &buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return 0, errors.New("the daemon closed the terminal's stream")
			}
			return 0, err
		}
		switch typ {
		case rawframe.Output:
			if _, err := w.Write(p); err != nil {
				return 0, err
			}
			t.Offset += int64(len(p))
		case rawframe.Error:
			if string(p) == rawframe.Replaced {
				return 0, ErrReplaced
			}
			return 0, errors.New(string(p))
		case rawframe.Exit:
			var e protocol.TerminalExit
			if err := json.Unmarshal(p, &e); err != nil {
				return 0, fmt.Errorf("terminal exit: %w", err)
			}
			return ExitStatus(&e), nil
		}
	}
}
