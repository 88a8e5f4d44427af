package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"
)

// EventsOptions say which of a task's events to print.
type EventsOptions struct {
	After  int64 // print events after this sequence number (-1: all)
	Follow bool  // keep printing until the task ends
	// Retries is how many dropped connections a follow survives (5 if 0).
	Retries int
	// Resumed is told of each resumption after a dropped connection.
	Resumed func(err error, after int64)
}

// Events prints a task's events to w, one JSON object a line. With
// Follow it waits for new ones until the task ends and, if the connection
// drops, resumes after the last one it printed, so none is lost or
// printed twice.
func (c *Client) Events(ctx context.Context, task string, o EventsOptions, w io.Writer) error {
	retries := o.Retries
	if retries == 0 {
		retries = 5
	}
	after := o.After
	for attempt := 0; ; attempt++ {
		last, done, err := c.streamEvents(ctx, task, after, o.Follow, w)
		after = max(after, last)
		switch {
		case done:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case attempt >= retries:
			return err
		}
		if o.Resumed != nil {
			o.Resumed(err, after)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// streamEvents reads one SSE response; done means it ended for good.
func (c *Client) streamEvents(ctx context.Context, task string, after int64, follow bool, w io.Writer) (int64, bool, error) {
	q := "?after=" + strconv.FormatInt(after, 10)
	if follow {
		q += "&follow=1"
	}
	resp, err := c.Open(ctx, "GET", "/v1/tasks/"+url.PathEscape(task)+"/events"+q, nil)
	if err != nil {
		var e *Error
		return after, errors.As(err, &e) || !follow, err
	}
	defer resp.Body.Close()
	ended := false
	err = readSSE(resp.Body, func(id, name, data string) bool {
		if name == "end" {
			ended = true
			return false
		}
		fmt.Fprintln(w, data)
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			after = n
		}
		return true
	})
	if ended {
		return after, true, nil
	}
	if !follow {
		return after, true, err
	}
	if err != nil {
		return after, false, fmt.Errorf("stream ended early: %w", err)
	}
	return after, false, errors.New("stream ended before the task did")
}
