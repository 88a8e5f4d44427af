package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

func filesPath(user, rest string, q url.Values) string {
	return "/v1/executors/" + url.PathEscape(user) + "/files" + rest + "?" + q.Encode()
}

// ListFiles lists path in user's executor.
func (c *Client) ListFiles(ctx context.Context, user, path string, recursive bool) (protocol.ListFilesResult, error) {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "1")
	}
	var res protocol.ListFilesResult
	err := c.Do(ctx, "GET", filesPath(user, "", q), nil, &res)
	return res, err
}

// ReadFile copies user's file path to w, as the daemon streams it.
func (c *Client) ReadFile(ctx context.Context, user, path string, w io.Writer) (int64, error) {
	resp, err := c.Open(ctx, "GET", filesPath(user, "/content", url.Values{"path": {path}}), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// WriteFile makes r user's file path, atomically (mode: octal, "" for
// the executor's default).
func (c *Client) WriteFile(ctx context.Context, user, path, mode string, r io.Reader) (apiwire.FileWritten, error) {
	q := url.Values{"path": {path}}
	if mode != "" {
		q.Set("mode", mode)
	}
	req, err := http.NewRequestWithContext(ctx, "PUT", "http://agor"+filesPath(user, "/content", q), r)
	if err != nil {
		return apiwire.FileWritten{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return apiwire.FileWritten{}, &unavailableError{socket: c.socket, err: err}
	}
	defer resp.Body.Close()
	if err := replyError(resp); err != nil {
		return apiwire.FileWritten{}, err
	}
	var res apiwire.FileWritten
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

// WatchFiles calls fn with each change beneath path in user's executor
// until ctx ends, reconnecting (with Last-Event-ID) when the stream drops;
// name is apiwire.WatchEventFile, or WatchEventResync when changes may
// have been missed.
func (c *Client) WatchFiles(ctx context.Context, user, path string, recursive bool, fn func(name string, ev protocol.FileEvent)) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "1")
	}
	last := ""
	for {
		var err error
		last, err = c.watchOnce(ctx, filesPath(user, "/watch", q), last, fn)
		var e *Error
		if ctx.Err() != nil || errors.As(err, &e) {
			return err
		}
		select { // the daemon restarted or the executor went: again, soon
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (c *Client) watchOnce(ctx context.Context, path, last string, fn func(string, protocol.FileEvent)) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://agor"+path, nil)
	if err != nil {
		return last, err
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return last, &unavailableError{socket: c.socket, err: err}
	}
	defer resp.Body.Close()
	if err := replyError(resp); err != nil {
		return last, err
	}
	err = readSSE(resp.Body, func(id, name, data string) bool {
		var ev protocol.FileEvent
		_ = json.Unmarshal([]byte(data), &ev)
		fn(name, ev)
		last = id
		return true
	})
	return last, err
}
