package store

import (
	"fmt"

	"github.com/agor-sh/agor/internal/audit"
)

const auditCols = `time, action, unix_user, session_id, task_id, credential, tool, mode, decision, reason, count`

// AppendAudit stores r (Time now when zero).
func (db *DB) AppendAudit(r audit.Record) error {
	if r.Time.IsZero() {
		r.Time = now()
	}
	_, err := db.w.Exec(`INSERT INTO audit (`+auditCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		nanos(r.Time), r.Action, r.User, r.Session, r.Task, r.Credential, r.Tool, r.Mode, r.Decision,
		r.Reason, r.Count)
	if err != nil {
		return fmt.Errorf("store audit record %s: %w", r.Action, err)
	}
	return nil
}

// QueryAudit returns the records matching f, oldest first: the newest
// f.Limit of them when f.Limit > 0. Empty fields of f match everything,
// as audit.Logger.Query does.
func (db *DB) QueryAudit(f audit.Filter) ([]audit.Record, error) {
	rows, err := db.r.Query(`SELECT `+auditCols+` FROM (
		SELECT id, `+auditCols+` FROM audit
		WHERE (?1 = '' OR unix_user = ?1) AND (?2 = '' OR task_id = ?2) AND (?3 = '' OR action = ?3)
			AND time >= ?4
		ORDER BY id DESC LIMIT ?5
	) ORDER BY id`, f.User, f.Task, string(f.Action), nanos(f.Since), sqlLimit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("query audit: %w", err)
	}
	return collect(rows, scanAudit)
}

func scanAudit(s scanner) (audit.Record, error) {
	var r audit.Record
	var t int64
	err := s.Scan(&t, &r.Action, &r.User, &r.Session, &r.Task, &r.Credential, &r.Tool, &r.Mode,
		&r.Decision, &r.Reason, &r.Count)
	r.Time = fromNanos(t)
	return r, err
}
