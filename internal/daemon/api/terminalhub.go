package api

import (
	"sync"

	"github.com/agor-sh/agor/internal/daemon/termcarry"
)

// Terminals carries terminals' bytes to the clients attached through the
// API (termcarry.Hub: the pool's handlers must route to it) and, in a
// shared account's executor, remembers who spawned each terminal.
type Terminals struct {
	termcarry.Hub
	mu     sync.Mutex
	owners map[string]string // terminal_id → person, in a shared account's executor
}

// key names an executor's terminal or watch: its account + "/" + id.
func key(user, id string) string { return user + "/" + id }

// own records that person spawned terminal id in a shared executor.
func (t *Terminals) own(id, person string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owners == nil {
		t.owners = map[string]string{}
	}
	t.owners[id] = person
}

// mine reports whether person may see terminal id: in a shared executor,
// only the terminals they spawned.
func (t *Terminals) mine(id, person string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owners[id] == person
}
