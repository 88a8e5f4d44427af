package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// PromptStream is a prompt's reply, read a line at a time.
type PromptStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// Prompt runs one agent turn as user and returns its live stream; the
// caller closes it.
func (c *Client) Prompt(ctx context.Context, user string, body apiwire.PromptBody) (*PromptStream, error) {
	resp, err := c.Open(ctx, "POST", "/v1/executors/"+url.PathEscape(user)+"/prompt", body)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	return &PromptStream{body: resp.Body, sc: sc}, nil
}

// Next returns the next line, decoded and as sent; io.EOF when the
// stream ended.
func (s *PromptStream) Next() (apiwire.PromptLine, []byte, error) {
	var l apiwire.PromptLine
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return l, nil, err
		}
		return l, nil, io.EOF
	}
	raw := s.sc.Bytes()
	if err := json.Unmarshal(raw, &l); err != nil {
		return l, raw, fmt.Errorf("bad line from the daemon: %w", err)
	}
	return l, raw, nil
}

// Close ends the stream (the task runs on in the daemon).
func (s *PromptStream) Close() error { return s.body.Close() }

// PromptDetached starts a turn through the session API (making a session
// first unless body names one) and returns at once.
func (c *Client) PromptDetached(ctx context.Context, user string, body apiwire.PromptBody) (apiwire.PromptAccepted, error) {
	var out apiwire.PromptAccepted
	if body.SessionID == "" {
		var sess apiwire.SessionView
		req := map[string]any{"unix_user": user, "agentic_tool": body.Tool, "cwd": body.Cwd, "model": body.Model, "permission_mode": body.PermissionMode, "environment": body.Environment}
		if err := c.Do(ctx, "POST", "/v1/sessions", req, &sess); err != nil {
			return out, err
		}
		body.SessionID = sess.ID
	}
	err := c.Do(ctx, "POST", "/v1/sessions/"+url.PathEscape(body.SessionID)+"/prompt", body, &out)
	return out, err
}

// PendingPermission returns task's open permission request, waiting a
// moment for it: the request reaches the queue just after its event.
// "" means none.
func (c *Client) PendingPermission(ctx context.Context, task string) (string, error) {
	for range 20 {
		out, err := c.Permissions(ctx)
		if err != nil {
			return "", err
		}
		for _, p := range out.Permissions {
			if p.Task == task {
				return p.ID, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return "", nil
}

// Prewarm asks for body's agent to be started ahead of its prompt (the
// prompt, if any, is not sent): the daemon reserves the session a new
// prompt of the same options will get.
func (c *Client) Prewarm(ctx context.Context, user string, body apiwire.PromptBody) (apiwire.PrewarmAccepted, error) {
	var out apiwire.PrewarmAccepted
	body.Prompt = ""
	err := c.Do(ctx, "POST", "/v1/executors/"+url.PathEscape(user)+"/prewarm", body, &out)
	return out, err
}
