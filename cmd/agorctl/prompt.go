package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/apiwire"
	"golang.org/x/term"
)

type promptOptions struct {
	tool, cwd, mode, model, session string
	limit                           time.Duration
	jsonOut, detach                 bool
}

// promptCmd: agorctl prompt [OPTIONS] USER PROMPT... — runs one agent turn
// in USER's executor and shows its events as they happen.
func promptCmd(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	var o promptOptions
	a, rest, code, ok := parseAPI("prompt", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&o.tool, "tool", "claude-code", "agentic tool: claude-code, codex, gemini or opencode")
		fs.StringVar(&o.cwd, "cwd", ".", "working `directory`, relative to the user's home")
		fs.StringVar(&o.mode, "mode", "default", "permission mode: default, acceptEdits, bypassPermissions or plan")
		fs.StringVar(&o.model, "model", "", "model (default: the agent's)")
		fs.StringVar(&o.session, "session", "", "continue this session `ID` (printed by an earlier prompt)")
		fs.DurationVar(&o.limit, "limit", 0, "stop the agent after this `duration` (0: no limit)")
		fs.BoolVar(&o.jsonOut, "json", false, "print the raw NDJSON stream instead of rendering it")
		fs.BoolVar(&o.detach, "detach", false, "start the task and return at once, printing its ids (follow with agorctl events --follow)")
	})
	if !ok {
		return code
	}
	if len(rest) < 2 {
		fmt.Fprintln(stderr, "agorctl prompt: usage: agorctl prompt [OPTIONS] USER PROMPT...")
		return 2
	}
	body := apiwire.PromptBody{SessionID: o.session, Tool: o.tool, Prompt: strings.Join(rest[1:], " "), Cwd: o.cwd,
		PermissionMode: o.mode, Model: o.model, TimeoutMS: o.limit.Milliseconds()}
	if o.detach {
		return detached(ctx, newAPIClient(a.socket), rest[0], body, stdout, stderr)
	}
	resp, err := startPrompt(ctx, newAPIClient(a.socket), rest[0], body)
	if err != nil {
		return fail(stderr, "prompt", err)
	}
	defer resp.Body.Close()
	r := &renderer{out: stdout, errw: stderr, c: newAPIClient(a.socket), stdin: stdin, json: o.jsonOut, start: time.Now()}
	return r.run(ctx, resp.Body)
}

// detached starts the task through the session API and returns at once.
func detached(ctx context.Context, c *apiClient, user string, body apiwire.PromptBody, stdout, stderr io.Writer) int {
	if body.SessionID == "" {
		var sess apiwire.SessionView
		req := map[string]any{"unix_user": user, "agentic_tool": body.Tool, "cwd": body.Cwd, "model": body.Model, "permission_mode": body.PermissionMode}
		if err := c.do(ctx, "POST", "/v1/sessions", req, &sess); err != nil {
			return fail(stderr, "prompt", err)
		}
		body.SessionID = sess.ID
	}
	var out struct {
		TaskID    string `json:"task_id"`
		SessionID string `json:"session_id"`
	}
	if err := c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(body.SessionID)+"/prompt", body, &out); err != nil {
		return fail(stderr, "prompt", err)
	}
	fmt.Fprintf(stdout, "task %s session %s\n", out.TaskID, out.SessionID)
	fmt.Fprintf(stderr, "follow it with: agorctl events --follow %s\n", out.TaskID)
	return 0
}

func startPrompt(ctx context.Context, c *apiClient, user string, body apiwire.PromptBody) (*http.Response, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", "http://agor/v1/executors/"+url.PathEscape(user)+"/prompt", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon at %s: %w (is agor-daemon running?)", c.socket, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e apiwire.ErrorBody
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return nil, fmt.Errorf("%s (%s)", e.Error.Message, e.Error.Reason)
		}
		return nil, fmt.Errorf("daemon: %s", resp.Status)
	}
	return resp, nil
}

// renderer shows a prompt's stream for a person: the agent's text as it
// comes, tool calls and results, permission questions asked on the spot,
// and a progress line on stderr while waiting.
type renderer struct {
	out, errw io.Writer
	c         *apiClient
	stdin     *os.File
	json      bool
	start     time.Time
	task      string
	session   string

	mu     sync.Mutex // around the progress line and output
	events int
	status bool      // a progress line is on screen
	midLn  bool      // the last output did not end a line: no progress line now
	last   time.Time // of the last output
}

type streamLine struct {
	TaskID    string             `json:"task_id"`
	SessionID string             `json:"session_id"`
	Event     *streamEvent       `json:"event"`
	Result    *promptResult      `json:"result"`
	Missing   json.RawMessage    `json:"missing_events"`
	Error     *apiwire.ErrorBody `json:"error"`
}

type streamEvent struct {
	Sequence  int64 `json:"sequence"`
	EventData struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	} `json:"event_data"`
}

type promptResult struct {
	Status       string         `json:"status"`
	MessageCount int            `json:"message_count"`
	Usage        map[string]any `json:"token_usage"`
	Error        *struct{ Code, Message string }
}

func (r *renderer) run(ctx context.Context, body io.Reader) int {
	stop := r.progress()
	defer stop()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	for sc.Scan() {
		if r.json {
			fmt.Fprintln(r.out, sc.Text())
		}
		var l streamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fail(r.errw, "prompt", fmt.Errorf("bad line from the daemon: %v", err))
		}
		if code, done := r.line(ctx, l); done {
			return code
		}
	}
	return fail(r.errw, "prompt", errors.New("the daemon ended the stream before the result"))
}

// line handles one stream line; done is true with the exit status.
func (r *renderer) line(ctx context.Context, l streamLine) (int, bool) {
	switch {
	case l.TaskID != "":
		r.task, r.session = l.TaskID, l.SessionID
	case l.Event != nil:
		r.event(ctx, l.Event)
	case l.Error != nil:
		return fail(r.errw, "prompt", fmt.Errorf("%s (%s)", l.Error.Error.Message, l.Error.Error.Reason)), true
	case l.Result != nil:
		return r.result(l.Result), true
	}
	return 0, false
}

func (r *renderer) event(ctx context.Context, ev *streamEvent) {
	r.mu.Lock()
	r.events++
	r.mu.Unlock()
	if r.json {
		return
	}
	d := ev.EventData.Data
	switch ev.EventData.Type {
	case "text_delta":
		r.print(r.out, "%s", d["text"])
	case "message_stop":
		r.endLine()
	case "thinking_delta":
		r.print(r.errw, "\x1b[2m%s\x1b[0m", d["text"])
	case "tool_call":
		in, _ := json.Marshal(d["tool_input"])
		r.print(r.out, "\n⏺ %s %s\n", d["tool_name"], clip(string(in), 200))
	case "tool_result":
		r.print(r.out, "  ⎿ %s\n", clip(fmt.Sprint(d["output"]), 400))
	case "permission_asked":
		r.ask(ctx, d)
	case "permission_decided":
		r.print(r.out, "  [%s %v]\n", map[bool]string{true: "allowed", false: "denied"}[d["approved"] == true], d["reason"])
	case "error":
		r.print(r.errw, "\nagent error: %v\n", d["message"])
	}
}

// ask answers a permission question here when this is a terminal;
// otherwise it says how to answer it from elsewhere.
func (r *renderer) ask(ctx context.Context, d map[string]any) {
	id := r.pendingID(ctx)
	in, _ := json.Marshal(d["tool_input"])
	if id == "" {
		return
	}
	if !term.IsTerminal(int(r.stdin.Fd())) {
		r.print(r.errw, "\n? %s %s wants permission: agorctl permissions approve %s (or deny)\n", d["tool_name"], clip(string(in), 200), id)
		return
	}
	r.print(r.errw, "\n? allow %s %s [y/N] ", d["tool_name"], clip(string(in), 200))
	answer, _ := bufio.NewReader(r.stdin).ReadString('\n')
	yes := strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y")
	body := map[string]any{"approved": yes, "reason": "answered in agorctl prompt"}
	if err := r.c.do(ctx, "POST", "/v1/permissions/"+url.PathEscape(id), body, nil); err != nil {
		r.print(r.errw, "agorctl prompt: answer: %v\n", err)
	}
}

// pendingID finds this task's open permission request.
func (r *renderer) pendingID(ctx context.Context) string {
	var out struct {
		Permissions []struct{ ID, Task string }
	}
	for range 20 { // the request reaches the queue just after the event
		if err := r.c.do(ctx, "GET", "/v1/permissions", nil, &out); err != nil {
			return ""
		}
		for _, p := range out.Permissions {
			if p.Task == r.task {
				return p.ID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ""
}

func (r *renderer) result(res *promptResult) int {
	u := res.Usage
	r.print(r.errw, "\n%s · %d messages · tokens in %v out %v (cache read %v, write %v) · %s · session %s\n",
		res.Status, res.MessageCount, u["input_tokens"], u["output_tokens"], u["cache_read_tokens"], u["cache_write_tokens"],
		time.Since(r.start).Round(100*time.Millisecond), r.session)
	if res.Error != nil {
		r.print(r.errw, "%s: %s\n", res.Error.Code, res.Error.Message)
	}
	switch res.Status {
	case "completed":
		return 0
	case "timeout":
		return 124
	case "cancelled":
		return 130
	}
	return 1
}

// endLine ends a line of agent text, if one is open.
func (r *renderer) endLine() {
	r.mu.Lock()
	open := r.midLn
	r.mu.Unlock()
	if open {
		r.print(r.out, "\n")
	}
}

// print writes, clearing the progress line first.
func (r *renderer) print(w io.Writer, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status {
		fmt.Fprint(r.errw, "\r\x1b[K")
		r.status = false
	}
	text := fmt.Sprintf(format, args...)
	if text != "" {
		r.midLn, r.last = !strings.HasSuffix(text, "\n"), time.Now()
	}
	fmt.Fprint(w, text)
}

// progress draws "⠋ working · N events · 3.2s" on stderr when it is a
// terminal and nothing else has been printed for a moment.
func (r *renderer) progress() (stop func()) {
	f, ok := r.errw.(*os.File)
	if !ok || r.json || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				r.mu.Lock()
				if r.midLn || time.Since(r.last) < 300*time.Millisecond {
					r.mu.Unlock()
					continue
				}
				fmt.Fprintf(r.errw, "\r\x1b[K%c working · %d events · %s", frames[i%len(frames)], r.events, time.Since(r.start).Round(100*time.Millisecond))
				r.status = true
				r.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		r.mu.Lock()
		if r.status {
			fmt.Fprint(r.errw, "\r\x1b[K")
		}
		r.mu.Unlock()
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
