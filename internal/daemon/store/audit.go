package store

import (
	"database/sql"
	"fmt"

	"github.com/agor-sh/agor/internal/daemon/audit"
)

const auditCols = `time, action, unix_user, session_id, task_id, credential, tool, mode, decision, reason, count, uid`

// AppendAudit stores r (Time now when zero).
func (db *DB) AppendAudit(r audit.Record) error {
	if r.Time.IsZero() {
		r.Time = now()
	}
	_, err := db.exec(`INSERT INTO audit (`+auditCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		nanos(r.Time), r.Action, r.User, r.Session, r.Task, r.Credential, r.Tool, r.Mode, r.Decision,
		r.Reason, r.Count, uidArg(r.UID))
	if err != nil {
		return fmt.Errorf("store audit record %s: %w", r.Action, err)
	}
	return nil
}

// QueryAudit returns the records matching f, oldest first: the newest
// f.Limit of them when f.Limit > 0. Empty fields of f match everything,
// as audit.Logger.Query does, and f.UID likewise leaves out records of
// another uid only.
func (db *DB) QueryAudit(f audit.Filter) ([]audit.Record, error) {
	rows, err := db.r.Query(`SELECT `+auditCols+` FROM (
		SELECT id, `+auditCols+` FROM audit
		WHERE (?1 = '' OR unix_user = ?1) AND (?2 = '' OR task_id = ?2) AND (?3 = '' OR action = ?3)
			AND time >= ?4 AND (?6 IS NULL OR uid IS NULL OR uid = ?6)
		ORDER BY id DESC LIMIT ?5
	) ORDER BY id`, f.User, f.Task, string(f.Action), nanos(f.Since), sqlLimit(f.Limit), uidArg(f.UID))
	if err != nil {
		return nil, fmt.Errorf("query audit: %w", err)
	}
	return collect(rows, scanAudit)
}

func scanAudit(s scanner) (audit.Record, error) {
	var r audit.Record
	var t int64
	var uid sql.NullInt64
	err := s.Scan(&t, &r.Action, &r.User, &r.Session, &r.Task, &r.Credential, &r.Tool, &r.Mode,
		&r.Decision, &r.Reason, &r.Count, &uid)
	r.Time = fromNanos(t)
	if uid.Valid {
		r.UID = audit.StoredUID(uid.Int64)
	}
	return r, err
}

// uidArg is u as an SQL value: NULL for none.
func uidArg(u audit.UID) any {
	if n, ok := u.Get(); ok {
		return n
	}
	return nil
}
