package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// claudeLive is one Claude Code process across turns.
type claudeLive struct {
	p      *Proc
	kill   context.CancelFunc // ends the process group
	redact func([]byte) []byte
	begun  bool // initialize was sent: later turns send only their message
	// prepared: initialize was sent before any turn (Prepare); the first
	// turn sends only its message, and is warm as far as ErrGone goes.
	prepared bool
	broken   bool // the process ended (finish waited for it)
	// mode is the process's permission mode (Claude Code's name); bypass
	// says it was started in bypassPermissions, the only way Claude Code
	// lets a session switch into that mode later.
	mode   string
	bypass bool
	model  string // the model it runs ("": the CLI's default)
	asked  int    // control requests sent

	mu     sync.Mutex
	active bool        // a turn is running: an interrupt is for it
	grace  *time.Timer // kills the agent if an interrupt is not answered
	once   sync.Once
}

// setActive marks the turn running, or over (its interrupt's kill
// timer, if any, is then stopped).
func (l *claudeLive) setActive(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = on
	if !on && l.grace != nil {
		l.grace.Stop()
		l.grace = nil
	}
}

var _ Live = (*claudeLive)(nil)

func (l *claudeLive) Pid() int     { return l.p.Pid() }
func (l *claudeLive) Usable() bool { return !l.broken && l.p.Alive() }

// CanSwitchMode: Claude Code changes its mode live (set_permission_mode),
// but into bypassPermissions only when it was started in it; and a session
// started in it keeps bypass semantics in plan (tools run unasked), so
// such a process is restarted for plan rather than switched.
func (l *claudeLive) CanSwitchMode(mode string) bool {
	m, ok := claudeModes[mode]
	switch {
	case !ok:
		return false
	case l.bypass:
		return m != "plan"
	}
	return m != "bypassPermissions"
}

// CanSwitchModel: set_model names the model of the turns that follow;
// back to the CLI's own default ("") is a restart, as there is no name to
// give it.
func (l *claudeLive) CanSwitchModel(model string) bool { return model != "" }

// Turn sends one user message and reads until its result line.
func (l *claudeLive) Turn(ctx context.Context, req Request, host Host) (Result, error) {
	warm := l.begun || l.prepared
	if l.broken || (warm && !l.p.Alive()) {
		l.Close()
		return Result{}, ErrGone
	}
	if warm {
		if err := l.switchTo(ctx, req); err != nil {
			l.Close()
			if ctx.Err() != nil {
				return Result{Status: "failed", Err: &Error{Code: "cancelled", Message: "claude-code turn stopped: " + context.Cause(ctx).Error()}}, ctx.Err()
			}
			return Result{}, fmt.Errorf("%w: %w", ErrGone, err)
		}
	}
	ch := &counting{Host: host}
	t := &claudeTurn{ctx: ctx, p: l.p, host: ch, redact: l.redact, init: !l.begun && !l.prepared, mode: req.PermissionMode}
	if !l.begun {
		t.resume = req.Resume
	}
	l.begun = true
	l.setActive(true)
	stop := context.AfterFunc(ctx, l.interrupt)
	res := t.run(req.Prompt)
	stop()
	l.setActive(false)
	l.p.ReapStrays()
	if !t.done { // finish ran: the process is gone
		l.broken = true
		l.kill()
		if warm && ch.silent() && ctx.Err() == nil {
			return Result{}, ErrGone
		}
	}
	if ctx.Err() != nil {
		if t.done {
			res.Status, res.Err = "failed", &Error{Code: "cancelled", Message: "claude-code turn interrupted: " + context.Cause(ctx).Error()}
		}
		return res, ctx.Err()
	}
	return res, nil
}

// claudeControlWait bounds the wait for Claude Code's answer to a
// control request between turns (a variable for tests).
var claudeControlWait = 10 * time.Second

// switchTo makes the idle process's permission mode and model req's,
// where they differ: set_permission_mode and set_model, as the Agent
// SDK's setPermissionMode and setModel send them.
func (l *claudeLive) switchTo(ctx context.Context, req Request) error {
	m, ok := claudeModes[req.PermissionMode]
	if !ok {
		return fmt.Errorf("unknown permission mode %q", req.PermissionMode)
	}
	if m != l.mode {
		if err := l.control(ctx, "set_permission_mode", "mode", m); err != nil {
			return err
		}
		l.mode = m
	}
	if req.Model != "" && req.Model != l.model {
		if err := l.control(ctx, "set_model", "model", req.Model); err != nil {
			return err
		}
		l.model = req.Model
	}
	return nil
}

// control sends the control request subtype {key: value} and waits for
// Claude Code's control_response, within claudeControlWait and ctx: an error is a
// refusal, no answer (the process is then killed), or the process's end.
// Lines before the answer belong to no turn and are dropped.
func (l *claudeLive) control(ctx context.Context, subtype, key, value string) error {
	l.asked++
	id := "control-" + strconv.Itoa(l.asked)
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": id,
		"request": map[string]any{"subtype": subtype, key: value}})
	what := subtype + " " + value
	wctx, cancel := context.WithTimeout(ctx, claudeControlWait)
	defer cancel()
	stop := context.AfterFunc(wctx, l.kill)
	err := l.awaitControl(id, b)
	if !stop() {
		return fmt.Errorf("%s: no answer: %w", what, context.Cause(wctx))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// awaitControl sends the control_request b and reads until the
// control_response to id.
func (l *claudeLive) awaitControl(id string, b []byte) error {
	if err := l.p.Send(b); err != nil {
		return err
	}
	for {
		line, err := l.p.Line()
		if err != nil {
			return err
		}
		var r struct {
			Type     string `json:"type"`
			Response struct {
				Subtype   string `json:"subtype"`
				RequestID string `json:"request_id"`
				Error     string `json:"error"`
			} `json:"response"`
		}
		if json.Unmarshal(line, &r) != nil || r.Type != "control_response" || r.Response.RequestID != id {
			continue
		}
		if r.Response.Subtype != "success" {
			return fmt.Errorf("refused: %s", l.redact([]byte(r.Response.Error)))
		}
		return nil
	}
}

// interrupt asks Claude Code to stop the turn (its result line follows),
// and kills it if it has not ended the turn within interruptGrace.
func (l *claudeLive) interrupt() {
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": "interrupt-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"request": map[string]any{"subtype": "interrupt"}})
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return // the turn ended meanwhile
	}
	l.grace = time.AfterFunc(interruptGrace, l.kill)
	if l.p.Send(b) != nil {
		l.kill()
	}
}

// Close closes Claude Code's input and waits for it to write its session
// and exit (killed after acpExitGrace).
func (l *claudeLive) Close() {
	l.once.Do(func() {
		if !l.broken {
			timer := time.AfterFunc(acpExitGrace, l.kill)
			_ = l.p.CloseInput()
			for { // drain, so Wait does not race our reads
				if _, err := l.p.Line(); err != nil {
					break
				}
			}
			_ = l.p.Wait()
			timer.Stop()
			l.broken = true
		}
		l.kill()
	})
}
