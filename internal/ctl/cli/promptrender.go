package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// renderer shows a prompt's stream for a person: the agent's text as it
// comes, tool calls and results, permission questions asked on the spot,
// and a progress line on stderr while waiting.
type renderer struct {
	out, errw io.Writer
	c         *apiclient.Client
	stdin     *os.File
	json      bool
	start     time.Time
	task      string
	session   string
	lastSeq   int64 // of the last event shown (-1: none), where a resume goes on

	mu        sync.Mutex // around the progress line and output
	events    int
	status    bool      // a progress line is on screen
	midLn     bool      // the last output did not end a line: no progress line now
	last      time.Time // of the last output
	lastEvent time.Time // of the agent's last event
	quietSaid int       // quietEvery periods of the silence already said
}

func (r *renderer) run(ctx context.Context, stream *apiclient.PromptStream) error {
	stop := r.progress()
	defer stop()
	for {
		l, raw, err := stream.Next()
		if r.json && raw != nil {
			fmt.Fprintln(r.out, string(raw))
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && r.task != "":
			return r.resume(ctx, err) // the daemon went away; the task did not
		case errors.Is(err, io.EOF):
			return errors.New("the daemon ended the stream before the result")
		case err != nil:
			return err
		}
		if done, err := r.line(ctx, l); done {
			return err
		}
	}
}

// line handles one stream line; done is true at the end, with the
// command's error (nil: completed).
func (r *renderer) line(ctx context.Context, l apiwire.PromptLine) (bool, error) {
	switch {
	case l.TaskID != "":
		r.mu.Lock() // the progress line names the task
		r.task, r.session = l.TaskID, l.SessionID
		r.mu.Unlock()
	case l.Event != nil:
		return false, r.event(ctx, l.Event)
	case l.Error != nil:
		return true, fmt.Errorf("%s (%s)", l.Error.Error.Message, l.Error.Error.Reason)
	case l.Result != nil:
		var res protocol.ExecutePromptResult
		if err := json.Unmarshal(l.Result, &res); err != nil {
			return true, fmt.Errorf("bad result from the daemon: %w", err)
		}
		if l.Status != "" { // the daemon recorded it otherwise: "incomplete"
			res.Status = l.Status
		}
		if l.Warning != "" {
			res.Warnings = append(res.Warnings, l.Warning)
		}
		return true, r.result(&res)
	}
	return false, nil
}

// resumeRetries bounds how long a prompt waits for a daemon that went
// away (a restart takes a second or two; retries are a second apart).
const resumeRetries = 60

// resume follows the task after the daemon's stream broke off: a task
// belongs to its executor, and the next daemon takes it over. The events
// go on from the last one shown (none twice, none missed), then the
// task's end as the daemon recorded it.
func (r *renderer) resume(ctx context.Context, cause error) error {
	r.mu.Lock()
	after := r.lastSeq
	r.mu.Unlock()
	r.print(r.errw, "\nagorctl prompt: the daemon went away (%v); following task %s from event %d\n", cause, r.task, after+1)
	w := &eventLines{r: r, ctx: ctx}
	o := apiclient.EventsOptions{After: after, Follow: true, Retries: resumeRetries}
	if err := r.c.Events(ctx, r.task, o, w); err != nil {
		return fmt.Errorf("following task %s after the daemon went away: %w", r.task, err)
	}
	if w.err != nil {
		return w.err
	}
	t, err := r.c.Task(ctx, r.task)
	if err != nil {
		return fmt.Errorf("task %s: %w", r.task, err)
	}
	var res protocol.ExecutePromptResult
	if len(t.Result) > 0 {
		if err := json.Unmarshal(t.Result, &res); err != nil {
			return fmt.Errorf("bad result from the daemon: %w", err)
		}
	}
	res.Status = t.Status // as recorded: "interrupted" when no executor had it
	if res.Error == nil && t.Error != "" {
		res.Error = &protocol.TaskError{Code: t.Status, Message: t.Error}
	}
	return r.result(&res)
}

// eventLines renders the JSON lines of agorctl events as a prompt's.
type eventLines struct {
	r   *renderer
	ctx context.Context
	buf []byte
	err error
}

func (w *eventLines) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		if w.r.json {
			fmt.Fprintln(w.r.out, string(apiwirePromptLine(line)))
		}
		var ev apiwire.StoredEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			w.err = fmt.Errorf("bad event from the daemon: %w", err)
			continue
		}
		if err := w.r.event(w.ctx, &ev); err != nil && w.err == nil {
			w.err = err
		}
	}
}

// apiwirePromptLine wraps a stored event as the prompt stream's line.
func apiwirePromptLine(ev []byte) []byte {
	return append(append([]byte(`{"event":`), ev...), '}')
}

// event shows one of the agent's events; one that does not decode is an
// error, not a blank line.
func (r *renderer) event(ctx context.Context, stored *apiwire.StoredEvent) error {
	r.mu.Lock()
	r.events++
	r.lastSeq = max(r.lastSeq, stored.Sequence)
	r.lastEvent = time.Now()
	r.mu.Unlock()
	if r.json {
		return nil
	}
	var ev protocol.Event
	if err := json.Unmarshal(stored.Data, &ev); err != nil {
		return fmt.Errorf("bad event %d from the daemon: %w", stored.Sequence, err)
	}
	d := ev.Data
	switch ev.Type {
	case "text_delta":
		r.print(r.out, "%s", d["text"])
	case "message_stop":
		r.endLine()
	case "thinking_delta":
		r.print(r.errw, "\x1b[2m%s\x1b[0m", d["text"])
	case "tool_call":
		in := asWritten(d["tool_input"])
		r.print(r.out, "\n⏺ %s %s\n", d["tool_name"], clip(string(in), 200))
	case "tool_result":
		r.print(r.out, "  ⎿ %s\n", clip(fmt.Sprint(d["output"]), 400))
	case "permission_asked":
		r.ask(ctx, d)
	case "permission_decided":
		r.print(r.out, "  [%s %v]\n", map[bool]string{true: "allowed", false: "denied"}[d["approved"] == true], d["reason"])
	case "error":
		r.print(r.errw, "\nagent error: %v\n", d["message"])
	case "notice":
		r.print(r.errw, "\n%v\n", d["message"])
	case "sandbox":
		if w, _ := d["warning"].(string); w != "" {
			r.print(r.errw, "warning: sandbox %v not enforced: %s\n", d["level"], w)
		}
	}
	return nil
}

// ask answers a permission question here when this is a terminal;
// otherwise it says how to answer it from elsewhere.
func (r *renderer) ask(ctx context.Context, d map[string]any) {
	id, _ := r.c.PendingPermission(ctx, r.task)
	in := asWritten(d["tool_input"])
	if id == "" {
		return
	}
	if r.stdin == nil || !term.IsTerminal(int(r.stdin.Fd())) {
		r.print(r.errw, "\n? %s %s wants permission: agorctl permissions approve %s (or deny)\n", d["tool_name"], clip(string(in), 200), id)
		return
	}
	r.print(r.errw, "\n? allow %s %s [y/N] ", d["tool_name"], clip(string(in), 200))
	answer, _ := bufio.NewReader(r.stdin).ReadString('\n')
	yes := strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y")
	if err := r.c.DecidePermission(ctx, id, yes, "answered in agorctl prompt"); err != nil {
		r.print(r.errw, "agorctl prompt: answer: %v\n", err)
	}
}

func (r *renderer) result(res *protocol.ExecutePromptResult) error {
	u := res.Usage
	r.print(r.errw, "\n%s · %d messages · tokens in %d out %d (cache read %d, write %d) · %s · session %s\n",
		res.Status, res.MessageCount, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
		time.Since(r.start).Round(100*time.Millisecond), r.session)
	if res.Error != nil {
		r.print(r.errw, "%s: %s\n", res.Error.Code, res.Error.Message)
	}
	for _, w := range res.Warnings {
		r.print(r.errw, "warning: %s\n", w)
	}
	switch res.Status {
	case "completed":
		if len(res.Warnings) > 0 {
			return exitWith(exitFailure) // what was asked did not all run as meant
		}
		return nil
	case "timeout":
		return exitWith(exitTimeout)
	case "cancelled":
		return exitWith(exitInterrupt)
	}
	return exitWith(exitFailure)
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

// progress says on stderr what the prompt waits for. On a terminal it
// draws "⠋ working · N events · 3.2s" when nothing else has been printed
// for a moment, and "waiting for the model · no reply for 12s" once no
// event has come for quietAfter. Elsewhere (a pipe, a log, --json) it
// writes a line for each quietEvery of silence, so that a model that
// cannot be reached (the CLI retrying for minutes) does not look like a
// hang.
func (r *renderer) progress() (stop func()) {
	f, ok := r.errw.(*os.File)
	tty := ok && !r.json && term.IsTerminal(int(f.Fd()))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := quietEvery / 10
		if tty {
			every = 120 * time.Millisecond
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				if tty {
					r.spin(i)
				} else {
					r.quietLine()
				}
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

// quietAfter is the silence after which the progress says the prompt
// waits for the model; quietEvery spaces the lines said off a terminal.
// Variables for the tests' sake.
var (
	quietAfter = 5 * time.Second
	quietEvery = 10 * time.Second
)

// silence is how long no event has come (since the start when none has).
// r.mu held.
func (r *renderer) silence() time.Duration {
	if r.lastEvent.IsZero() {
		return time.Since(r.start)
	}
	return time.Since(r.lastEvent)
}

func (r *renderer) spin(i int) {
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.midLn || time.Since(r.last) < 300*time.Millisecond {
		return
	}
	what := "working"
	if q := r.silence(); q >= quietAfter {
		what = "waiting for the model · no reply for " + q.Round(time.Second).String()
	}
	fmt.Fprintf(r.errw, "\r\x1b[K%c %s · %d events · %s", frames[i%len(frames)], what, r.events, time.Since(r.start).Round(100*time.Millisecond))
	r.status = true
}

// quietLine writes "waiting for the model" off a terminal once per
// quietEvery of silence.
func (r *renderer) quietLine() {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.silence()
	n := int(q / quietEvery)
	if n == 0 || n == r.quietSaid {
		if n == 0 {
			r.quietSaid = 0
		}
		return
	}
	r.quietSaid = n
	task := ""
	if r.task != "" {
		task = " (task " + r.task + "; Ctrl-C stops it)"
	}
	fmt.Fprintf(r.errw, "agorctl prompt: waiting for the model: no reply for %s%s\n", (time.Duration(n) * quietEvery).String(), task)
}
