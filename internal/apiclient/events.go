package apiclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
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
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	var name, id string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			name = line[7:]
		case strings.HasPrefix(line, "data: ") && name != "end":
			fmt.Fprintln(w, line[6:])
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				after = n
			}
		case line == "" && name == "end":
			return after, true, nil
		}
	}
	if !follow {
		return after, true, sc.Err()
	}
	if err := sc.Err(); err != nil {
		return after, false, fmt.Errorf("stream ended early: %w", err)
	}
	return after, false, errors.New("stream ended before the task did")
}
