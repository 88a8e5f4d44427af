package door

import (
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// sumWindow is how long refusals are summed before they are told: a
// flood of hundreds a second is one message and one log line of each
// kind.
const sumWindow = time.Second

// kind is what refusals are summed by.
type kind struct {
	reason string
	uid    uint32
	hasUID bool
	task   string
}

// sums are the refusals not told yet, and the timer that tells them.
type sums struct {
	n     map[kind]int
	timer *time.Timer
}

func (d *Door) refused(reason string, uid *uint32, task string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refusedLocked(reason, uid, task)
}

// refusedLocked counts one refusal; the first of a window starts the
// timer that tells them all.
func (d *Door) refusedLocked(reason string, uid *uint32, task string) {
	k := kind{reason: reason, task: task}
	if uid != nil {
		k.uid, k.hasUID = *uid, true
	}
	if d.sums.n == nil {
		d.sums.n = map[kind]int{}
	}
	d.sums.n[k]++
	if d.sums.timer == nil {
		d.sums.timer = time.AfterFunc(sumWindow, d.tell)
	}
}

// tell logs and notifies what was summed since the window began.
func (d *Door) tell() {
	d.mu.Lock()
	n := d.sums.n
	d.sums = sums{}
	d.mu.Unlock()
	for k, count := range n {
		p := protocol.GatewayRefusedParams{Reason: k.reason, Task: k.task, Count: count}
		attrs := []any{"reason", k.reason, "count", count}
		if k.hasUID {
			uid := k.uid
			p.UID = &uid
			attrs = append(attrs, "peer_uid", uid)
		}
		if k.task != "" {
			attrs = append(attrs, "task", k.task)
		}
		d.log().Warn("gateway relay: connections refused", attrs...)
		if d.Notify != nil {
			d.Notify(p)
		}
	}
}

// Close tells what is summed now and stops the timer (the executor is
// exiting).
func (d *Door) Close() {
	d.mu.Lock()
	t := d.sums.timer
	d.mu.Unlock()
	if t != nil && t.Stop() {
		d.tell()
	}
}
