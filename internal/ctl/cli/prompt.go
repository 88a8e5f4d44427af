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

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

type promptOptions struct {
	tool, cwd, mode, model, session, sandbox, env string
	limit                                         time.Duration
	jsonOut, detach                               bool
	in                                            promptInput
}

func newPrompt(a *app) *cobra.Command {
	var f apiFlags
	var o promptOptions
	c := &cobra.Command{
		Use:   "prompt USER PROMPT...",
		Short: "run one agent turn as USER and show its events live",
		Long: `Run one turn of an agent CLI (--tool claude-code, codex, gemini or opencode)
as USER in their executor and show its events as they come: text, tool calls
and results, permission questions (asked here on a terminal, else answer them
with agorctl permissions), then a summary with token usage. --session
continues an earlier session (the agent resumes its own). While no event
comes for a while, stderr says so ("waiting for the model: no reply for
10s"), on a terminal or not. Interrupted (Ctrl-C), agorctl stops the task; if
agorctl is killed or loses the daemon, the daemon stops the task 30 s later
unless someone follows it (agorctl events --follow TASK). --detach returns at
once with the task's id; the task runs on in the daemon to its end. The
words of PROMPT are joined with spaces; a PROMPT of - alone reads it from
stdin, --file from a file. While it is read, the daemon starts the agent
(a pre-warm, with the gateway on), so the prompt does not wait for the
CLI's start; --no-prewarm does not.

` + sandboxHelp + `

` + daemonHelp,
		Example: `  agorctl prompt alice 'explain this repo' --cwd src/app
  agorctl prompt alice --tool codex --mode plan 'add a test for parse'
  agorctl prompt alice --session 3f2a9c 'now fix it'
  git diff | agorctl prompt alice --tool codex -
  agorctl prompt alice --detach 'run the suite' && agorctl events --follow TASK
  agorctl prompt alice --sandbox workspace --mode bypassPermissions 'fix the build'`,
		Annotations: map[string]string{"exit": `0 the turn completed; 1 it failed (or the operation did); 2 usage error;
124 timed out (--limit, --timeout); 130 cancelled (agorctl tasks stop) or
interrupted.`},
		Args:              atLeast(1, "USER PROMPT..."),
		ValidArgsFunction: completeUser(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPrompt(cmd.Context(), a, &f, o, args[0], args[1:])
		},
	}
	addAPIFlags(c, &f)
	fs := c.Flags()
	fs.StringVar(&o.tool, "tool", "claude-code", "agentic tool: claude-code, codex, gemini or opencode")
	fs.StringVar(&o.cwd, "cwd", ".", "working `directory`, relative to the user's home")
	fs.StringVar(&o.mode, "mode", "default", "permission mode: default, acceptEdits, bypassPermissions or plan")
	fs.StringVar(&o.sandbox, "sandbox", "", "sandbox `level`: off, workspace or read-only (default: the daemon's sandbox.default)")
	_ = c.RegisterFlagCompletionFunc("sandbox", fixedCompletions("off", "workspace", "read-only"))
	fs.StringVar(&o.model, "model", "", "model (default: the agent's)")
	fs.StringVar(&o.env, "env", "", envFlagUsage)
	fs.StringVar(&o.session, "session", "", "continue this session `ID` (printed by an earlier prompt)")
	fs.DurationVar(&o.limit, "limit", 0, "stop the agent after this `duration` (0: no limit)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the raw NDJSON stream instead of rendering it")
	addPromptInputFlags(fs, &o.in)
	fs.BoolVar(&o.detach, "detach", false, "start the task and return at once, printing its ids (follow with agorctl events --follow)")
	c.Flags().Lookup("timeout").Usage = "give up after this `duration` (exit 124) with --detach; the live stream is bounded by --limit"
	_ = c.RegisterFlagCompletionFunc("tool", fixedCompletions("claude-code", "codex", "gemini", "opencode"))
	_ = c.RegisterFlagCompletionFunc("mode", fixedCompletions("default", "acceptEdits", "bypassPermissions", "plan"))
	_ = c.RegisterFlagCompletionFunc("session", completeSessions(&f))
	return c
}

// runPrompt starts the turn and renders it (or, detached, only starts it).
// The stream has no --timeout: the agent's own --limit bounds it.
func runPrompt(ctx context.Context, a *app, f *apiFlags, o promptOptions, user string, words []string) error {
	if err := workspaceCwd(o.sandbox, o.cwd); err != nil {
		return err
	}
	body := apiwire.PromptBody{SessionID: o.session, Tool: o.tool, Prompt: strings.Join(words, " "), Cwd: o.cwd,
		PermissionMode: o.mode, Model: o.model, TimeoutMS: o.limit.Milliseconds(), Sandbox: o.sandbox, Environment: o.env}
	o.in.noPrewarm = o.in.noPrewarm || o.detach // --detach makes the session first, which pre-warms it
	if err := o.in.read(ctx, a, f, user, words, &body); err != nil {
		return err
	}
	if o.detach {
		c, ctx, cancel := f.client(ctx)
		defer cancel()
		out, err := c.PromptDetached(ctx, user, body)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "task %s session %s\n", out.TaskID, out.SessionID)
		fmt.Fprintf(a.stderr, "follow it with: agorctl events --follow %s\n", out.TaskID)
		return nil
	}
	c := apiclient.New(f.socket)
	stream, err := c.Prompt(ctx, user, body)
	if err != nil {
		return err
	}
	defer stream.Close()
	stdin, _ := a.stdin.(*os.File)
	r := &renderer{out: a.stdout, errw: a.stderr, c: c, stdin: stdin, json: o.jsonOut, start: time.Now(), lastSeq: -1}
	err = r.run(ctx, stream)
	if ctx.Err() != nil && r.task != "" {
		r.stopTask() // interrupted: the person no longer wants it
	}
	return err
}

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
