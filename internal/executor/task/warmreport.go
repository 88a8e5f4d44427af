package task

import (
	"log/slog"
	"sync"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// warmReport tells the daemon this executor's warm agents (warm_agents),
// so that it can hold them to a cap across the host. Sending runs on a
// goroutine of its own, so that no turn waits on the connection, and is
// coalesced: when changes come faster than sends only the latest set
// goes, which is all the daemon keeps.
type warmReport struct {
	log *slog.Logger

	mu      sync.Mutex
	conn    *rpc.Conn            // the daemon's: the one the last prompt came on
	next    []protocol.WarmAgent // the set as it is now; nil until the first change
	due     bool                 // next is not sent yet
	sending bool                 // loop is running
	loops   sync.WaitGroup
}

// set makes s the set to send, replacing one not sent yet.
func (r *warmReport) set(s []protocol.WarmAgent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next, r.due = s, true
	r.startLocked()
}

// to sends the reports on conn from now on. A connection not heard of
// yet (the daemon restarted, or redialled) is told the current set.
func (r *warmReport) to(conn *rpc.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == conn {
		return
	}
	r.conn, r.due = conn, r.next != nil
	r.startLocked()
}

func (r *warmReport) startLocked() {
	if r.sending || !r.due || r.conn == nil {
		return
	}
	r.sending = true
	r.loops.Add(1)
	go r.loop()
}

// loop sends until nothing is due.
func (r *warmReport) loop() {
	defer r.loops.Done()
	for {
		r.mu.Lock()
		if !r.due || r.conn == nil {
			r.sending = false
			r.mu.Unlock()
			return
		}
		conn, p := r.conn, protocol.WarmAgentsParams{Agents: r.next}
		r.due = false
		r.mu.Unlock()
		// Best effort: a connection that has ended takes the daemon's view
		// with it, and the next connection is told afresh (to).
		if err := conn.Notify(protocol.MethodWarmAgents, p); err != nil {
			r.log.Debug("warm_agents not sent", "agents", len(p.Agents), "err", err)
		}
	}
}

// wait waits for the sends under way.
func (r *warmReport) wait() { r.loops.Wait() }
