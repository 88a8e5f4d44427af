package meter

import (
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
)

// maxIssued bounds the tasks whose key use is remembered; past it the
// set starts again (a second record of a task is no harm).
const maxIssued = 10_000

// keyIssued audits the key the gateway puts on g's requests, once per
// task, credential and scope, as get_api_key's records say it for a key
// handed out: api_key_issued naming the person, her uid and whether the
// key was hers (user_credential) or the daemon's (daemon_credential),
// after an account_mismatch record for each key of an earlier account of
// her name that was left alone. A key not found records the mismatches
// only, summed (the request is refused).
func (m *Meter) keyIssued(g gateway.Grant, uid uint32, name string, key credstore.Key, err error) {
	if m.Audit == nil {
		return
	}
	rec := audit.Record{User: g.Person, UID: audit.UIDOf(uid), Session: g.Session, Task: g.Task, Credential: name}
	if err != nil {
		for _, r := range mismatches(rec, key.Stale) {
			m.Audit.Aggregate(r)
		}
		return
	}
	if !m.firstUse(g.Task + "\x00" + name + "\x00" + key.Scope) {
		return
	}
	for _, r := range mismatches(rec, key.Stale) {
		m.Audit.Log(r)
	}
	rec.Action, rec.Reason = audit.APIKeyIssued, key.Scope+"_credential"
	m.Audit.Log(rec)
}

// mismatches are rec's account_mismatch records, one for each uid in stale.
func mismatches(rec audit.Record, stale []int64) []audit.Record {
	out := make([]audit.Record, 0, len(stale))
	for _, uid := range stale {
		r := rec
		r.Action, r.StoredUID, r.Reason = audit.AccountMismatch, audit.StoredUID(uid), "credential of another account of this name"
		out = append(out, r)
	}
	return out
}

// firstUse is whether key is seen for the first time (bounded).
func (m *Meter) firstUse(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.issued == nil || len(m.issued) >= maxIssued {
		m.issued = map[string]bool{}
	}
	seen := m.issued[key]
	m.issued[key] = true
	return !seen
}
