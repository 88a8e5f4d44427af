// Package door is the model gateway relay's door in the executor: a
// loopback connection is let through only when the kernel says it was
// made by this executor's account and is held by a process of a task
// that runs now, and then it carries that task's credential, which the
// agent never sees, to the daemon (the gateway's door line). Everything
// else is refused on the accept loop, before a byte is read, and the
// refusals are summed for the daemon's audit trail.
package door

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// DefaultMax bounds each task's connections open at once when Door.Max
// is 0: far above what a CLI keeps (a few, one per request in flight,
// which the gateway bounds at 16 a person), far below the relay's 256.
const DefaultMax = 64

// gatewayPrefix is the gateway's DoorPrefix (the executor does not import
// the daemon's packages).
const gatewayPrefix = "AGOR-GATEWAY-TASK "

// Door admits a task's own connections. The zero value is not usable:
// set UID (the executor's own account).
type Door struct {
	UID uint32
	Max int // connections per task at once; 0: DefaultMax
	// Notify hears the refusals, summed over a second (gateway_refused);
	// nil: they are logged only.
	Notify func(protocol.GatewayRefusedParams)
	Log    *slog.Logger

	mu    sync.Mutex
	turns map[*Turn]struct{} // the tasks running now
	sums  sums
}

var _ egress.Door = (*Door)(nil)

// Turn is one task at the door, from its start to its end.
type Turn struct {
	d          *Door
	task, cred string
	root       proc // the agent's process; zero until Started
	conns      map[net.Conn]struct{}
	closed     bool
}

// Open lets task's processes in with credential from now on, once Started
// names them; Close ends it. A nil Turn (no gateway) does nothing.
func (d *Door) Open(task, credential string) *Turn {
	t := &Turn{d: d, task: task, cred: credential, conns: map[net.Conn]struct{}{}}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.turns == nil {
		d.turns = map[*Turn]struct{}{}
	}
	d.turns[t] = struct{}{}
	return t
}

// Started names the task's processes: pid and everything it starts (for
// a warm agent, its kept process, for this turn only). The process's
// start time is kept with its pid, so that a pid used again is not it.
func (t *Turn) Started(pid int) {
	if t == nil {
		return
	}
	p, ok := procOf(pid)
	if !ok {
		return // gone already: nothing of it to let in
	}
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	t.root = p
}

// Close ends the turn: the task's connections are closed, and none of its
// processes gets in again (a warm agent's next turn opens its own).
func (t *Turn) Close() {
	if t == nil {
		return
	}
	d := t.d
	d.mu.Lock()
	t.closed = true
	delete(d.turns, t)
	open := t.conns
	t.conns = nil
	d.mu.Unlock()
	for c := range open {
		c.Close()
	}
}

// Admit implements egress.Door: c's client socket, found in the kernel's
// table, must be this account's, held by a process of a running task
// (found from each task's agent down through its children), with room
// under the task's bound. It reads nothing from c.
func (d *Door) Admit(c net.Conn) (egress.Pass, error) {
	sock, err := d.socketOf(c)
	if err != nil {
		return egress.Pass{}, err
	}
	t := d.holder(sock.Inode)
	if t == nil {
		d.refused(protocol.RefusedNotATask, &sock.UID, "")
		return egress.Pass{}, &egress.Refusal{Status: http.StatusForbidden,
			Message: "agor gateway relay: this connection is from no running agent task's process (the port serves only those)"}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	max := d.Max
	if max <= 0 {
		max = DefaultMax
	}
	switch {
	case t.closed:
		d.refusedLocked(protocol.RefusedNotATask, &sock.UID, "")
		return egress.Pass{}, &egress.Refusal{Status: http.StatusForbidden, Message: "agor gateway relay: its task has ended"}
	case len(t.conns) >= max:
		d.refusedLocked(protocol.RefusedTaskBound, nil, t.task)
		return egress.Pass{}, &egress.Refusal{Status: http.StatusTooManyRequests, Message: fmt.Sprintf(
			"agor gateway relay: task %s already has %d connections open to the model gateway; retry when one closes", t.task, max)}
	}
	t.conns[c] = struct{}{}
	return egress.Pass{Preamble: []byte(gatewayPrefix + t.cred + "\n"), Leave: func() { t.leave(c) }}, nil
}

func (t *Turn) leave(c net.Conn) {
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	delete(t.conns, c)
}

// socketOf is c's client socket as the kernel's table lists it, refused
// unless this account made it and a process holds it.
func (d *Door) socketOf(c net.Conn) (peer.TCPSocket, error) {
	client, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	server, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err1 != nil || err2 != nil {
		d.refused(protocol.RefusedUnknown, nil, "")
		return peer.TCPSocket{}, &egress.Refusal{Status: http.StatusForbidden, Message: "agor gateway relay: not a TCP connection"}
	}
	sock, found, err := peer.TCPClient(client, server)
	switch {
	case err != nil || !found || sock.Inode == 0:
		d.refused(protocol.RefusedUnknown, nil, "")
		return sock, &egress.Refusal{Status: http.StatusForbidden,
			Message: "agor gateway relay: the kernel's socket table does not say who made this connection"}
	case sock.UID != d.UID:
		d.refused(protocol.RefusedAnotherAccount, &sock.UID, "")
		return sock, &egress.Refusal{Status: http.StatusForbidden,
			Message: "agor gateway relay: this port serves its account's running agent tasks only"}
	}
	return sock, nil
}

// holder is the running turn one of whose processes holds the socket
// with inode; nil when none does. The trees are walked outside the lock.
func (d *Door) holder(inode uint64) *Turn {
	d.mu.Lock()
	live := make([]*Turn, 0, len(d.turns))
	roots := make([]proc, 0, len(d.turns))
	for t := range d.turns {
		if t.root.pid > 0 {
			live, roots = append(live, t), append(roots, t.root)
		}
	}
	d.mu.Unlock()
	link := socketLink(inode)
	for i, root := range roots {
		if treeHolds(root, link) {
			return live[i]
		}
	}
	return nil
}

func (d *Door) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}
