package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agor-sh/agor/internal/apiwire"
)

// sessionsCmd: agorctl sessions [--user U] [--json]
func sessionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user string
	var asJSON bool
	a, _, code, ok := parseAPI("sessions", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&user, "user", "", "only this user's sessions (admins; others see their own)")
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	})
	if !ok {
		return code
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	var out struct{ Sessions []apiwire.SessionView }
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/sessions?user="+url.QueryEscape(user), nil, &raw); err != nil {
		return fail(stderr, "sessions", err)
	}
	if asJSON {
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	_ = json.Unmarshal(raw, &out)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tUSER\tTOOL\tCWD\tSTATUS\tUPDATED")
	for _, s := range out.Sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.UnixUser, s.AgenticTool, s.Cwd, s.Status, s.UpdatedAt.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
	return 0
}

// tasksCmd: agorctl tasks SESSION [--json]
func tasksCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	a, rest, code, ok := parseAPI("tasks", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	})
	if !ok {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "agorctl tasks: usage: agorctl tasks SESSION")
		return 2
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(rest[0])+"/tasks", nil, &raw); err != nil {
		return fail(stderr, "tasks", err)
	}
	if asJSON {
		fmt.Fprintln(stdout, string(raw))
		return 0
	}
	var out struct{ Tasks []apiwire.TaskView }
	_ = json.Unmarshal(raw, &out)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tCREATED\tPROMPT")
	for _, t := range out.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Status, t.CreatedAt.Local().Format(time.DateTime), clip(t.Prompt, 60))
	}
	_ = tw.Flush()
	return 0
}

// eventsCmd: agorctl events TASK [--follow] [--after N]: one JSON event a
// line; with --follow it waits for new ones until the task ends and,
// if the connection drops, resumes after the last one it printed.
func eventsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var follow bool
	var after int64
	a, rest, code, ok := parseAPI("events", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&follow, "follow", false, "keep printing new events until the task ends")
		fs.Int64Var(&after, "after", -1, "start after this sequence number")
	})
	if !ok {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "agorctl events: usage: agorctl events [--follow] [--after N] TASK")
		return 2
	}
	c := newAPIClient(a.socket)
	for attempt := 0; ; attempt++ {
		last, done, err := streamEvents(ctx, c, rest[0], after, follow, stdout)
		after = max(after, last)
		switch {
		case done && err != nil:
			return fail(stderr, "events", err)
		case done:
			return 0
		case ctx.Err() != nil:
			return 130
		case attempt >= 5:
			return fail(stderr, "events", err)
		}
		fmt.Fprintf(stderr, "agorctl events: %v; resuming after %d\n", err, after)
		time.Sleep(time.Second)
	}
}

// streamEvents reads one SSE response; done means it ended normally.
func streamEvents(ctx context.Context, c *apiClient, task string, after int64, follow bool, stdout io.Writer) (int64, bool, error) {
	q := "?after=" + strconv.FormatInt(after, 10)
	if follow {
		q += "&follow=1"
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://agor/v1/tasks/"+url.PathEscape(task)+"/events"+q, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return after, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiwire.ErrorBody
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			return after, true, fmt.Errorf("%s (%s)", e.Error.Message, e.Error.Reason)
		}
		return after, true, fmt.Errorf("daemon: %s", resp.Status)
	}
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
			fmt.Fprintln(stdout, line[6:])
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

// stopCmd: agorctl stop TASK — stops a running task (its agent is killed).
func stopCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, rest, code, ok := parseAPI("stop", args, stderr, nil)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "agorctl stop: usage: agorctl stop TASK")
		return 2
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	var out json.RawMessage
	if err := c.do(ctx, "POST", "/v1/tasks/"+url.PathEscape(rest[0])+"/stop", nil, &out); err != nil {
		return fail(stderr, "stop", err)
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}
