package agent

import (
	"context"
	"encoding/json"
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
	broken bool // the process ended (finish waited for it)

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

func (l *claudeLive) Pid() int       { return l.p.Pid() }
func (l *claudeLive) ModeLive() bool { return false }
func (l *claudeLive) Usable() bool   { return !l.broken && l.p.Alive() }

// Turn sends one user message and reads until its result line.
func (l *claudeLive) Turn(ctx context.Context, req Request, host Host) (Result, error) {
	warm := l.begun
	if l.broken || (warm && !l.p.Alive()) {
		l.Close()
		return Result{}, ErrGone
	}
	ch := &counting{Host: host}
	t := &claudeTurn{ctx: ctx, p: l.p, host: ch, redact: l.redact, init: !l.begun}
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
