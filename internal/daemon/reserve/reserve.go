// Package reserve holds session ids given out before their session
// exists, for agents pre-warmed ahead of a person's first prompt.
package reserve

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/randid"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// Table holds session ids given out before their session exists:
// a pre-warmed agent is started with its session's gateway token, which
// names the session, before the prompt that makes the session. The id is
// claimed by the person's next new session of exactly the same options
// (Claim), at most once, within the pre-warm's idle bound; nothing is
// stored for it. The token is inert until then: the gateway serves it
// only while a task of its session runs, and no session has the id.
type Table struct {
	mu sync.Mutex
	by map[string]reserved // by Key
}

type reserved struct {
	id      string
	expires time.Time
}

// maxReservations bounds the table: a person's pre-warms are bounded by
// the request rate, the whole table by this (the oldest make room).
const maxReservations = 4096

// Key is who and what a reservation is for: the person (and the
// uid their account had), the tool, cwd, permission mode, model, the
// resolved sandbox level and the environment (its agent runs in that
// environment's executor, and its token goes live with the session's
// first task wherever that runs). Any difference is another reservation.
func Key(person string, uid uint32, b apiwire.PromptBody) string {
	return strings.Join([]string{person, strconv.FormatUint(uint64(uid), 10), b.Tool, b.Cwd, b.PermissionMode, b.Model, b.Sandbox, b.Environment}, "\x00")
}

// Reserve returns key's live reservation, or makes one lasting ttl.
func (r *Table) Reserve(key string, ttl time.Duration, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.by[key]; ok && now.Before(v.expires) {
		v.expires = now.Add(ttl) // a pre-warm again: its agent's bound starts again too
		r.by[key] = v
		return v.id
	}
	if r.by == nil {
		r.by = map[string]reserved{}
	}
	r.pruneLocked(now)
	id := randid.New(16)
	r.by[key] = reserved{id: id, expires: now.Add(ttl)}
	return id
}

// Claim takes key's live reservation away and returns its id ("" none).
func (r *Table) Claim(key string, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.by[key]
	delete(r.by, key)
	if !ok || !now.Before(v.expires) {
		return ""
	}
	return v.id
}

// pruneLocked drops the expired, and the soonest to expire while the
// table is full.
func (r *Table) pruneLocked(now time.Time) {
	for k, v := range r.by {
		if !now.Before(v.expires) {
			delete(r.by, k)
		}
	}
	for len(r.by) >= maxReservations {
		first := ""
		for k, v := range r.by {
			if first == "" || v.expires.Before(r.by[first].expires) {
				first = k
			}
		}
		delete(r.by, first)
	}
}
