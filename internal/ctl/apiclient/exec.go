package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// maxExecLine bounds one line of exec's stream: a chunk is 32 KiB of
// output, 44 KiB in base64.
const maxExecLine = 1 << 20

// Exec runs a command as user in their executor, copying its output to
// stdout and stderr as it comes, and returns its result. It asks for the
// stream, so neither end keeps the output; a daemon that answers with one
// JSON reply (before streams) is read as before.
func (c *Client) Exec(ctx context.Context, user string, body apiwire.ExecBody, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	hdr := http.Header{"Accept": {apiwire.NDJSON + ", application/json"}}
	resp, err := c.sendWith(ctx, "POST", c.envPath("/v1/executors/"+url.PathEscape(user)+"/exec"), body, hdr)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	defer resp.Body.Close()
	if err := replyError(resp); err != nil {
		return protocol.ExecResult{}, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != apiwire.NDJSON {
		return execReply(resp.Body, stdout, stderr)
	}
	return execLines(resp.Body, stdout, stderr)
}

// execReply reads the one JSON reply of a daemon that does not stream.
func execReply(r io.Reader, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	var res apiwire.ExecReply
	if err := json.NewDecoder(io.LimitReader(r, maxReply)).Decode(&res); err != nil {
		return protocol.ExecResult{}, fmt.Errorf("bad exec reply from the daemon: %w", err)
	}
	if _, err := io.WriteString(stdout, res.Stdout); err != nil {
		return protocol.ExecResult{}, err
	}
	if _, err := io.WriteString(stderr, res.Stderr); err != nil {
		return protocol.ExecResult{}, err
	}
	return res.ExecResult, nil
}

// errNoResult is a stream that ended before its result.
var errNoResult = errors.New("exec stream ended without a result")

func execLines(r io.Reader, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxExecLine)
	for sc.Scan() {
		var l apiwire.ExecLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return protocol.ExecResult{}, fmt.Errorf("bad exec line from the daemon: %w", err)
		}
		switch {
		case l.Result != nil:
			return *l.Result, nil
		case l.Error != nil:
			return protocol.ExecResult{}, &Error{Status: http.StatusOK, ErrorDetail: *l.Error}
		}
		w := stdout
		if l.Stream == protocol.StreamStderr {
			w = stderr
		}
		if _, err := w.Write(l.Data); err != nil {
			return protocol.ExecResult{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return protocol.ExecResult{}, fmt.Errorf("read exec stream: %w", err)
	}
	return protocol.ExecResult{}, errNoResult
}
