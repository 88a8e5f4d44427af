package apiclient

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"

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

// AttachTerminal upgrades a request on the daemon's socket to the
// terminal's two-way stream of apiwire.Frame lines. The caller reads
// from the returned reader (it may hold bytes already read) and writes
// and closes the connection.
func (c *Client) AttachTerminal(ctx context.Context, user, id string) (net.Conn, *bufio.Reader, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, nil, &unavailableError{socket: c.socket, err: err}
	}
	path := "/v1/executors/" + url.PathEscape(user) + "/terminals/" + url.PathEscape(id) + "/attach"
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: agor\r\nConnection: Upgrade\r\nUpgrade: agor-terminal\r\n\r\n", path)
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		if err := replyError(resp); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("attach: %s", resp.Status)
	}
	return conn, rd, nil
}

