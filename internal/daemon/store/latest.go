package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// IdleLatestSession is the session of user (while the name was uid's)
// in environment env ("": the host) that was used last, when none of
// that account's tasks there is queued or running: what a pre-warm on
// her executor's start resumes (a prompt on its way starts its own
// agent, so there is nothing to predict). ErrNotFound: no such session,
// or work is on its way.
func (db *DB) IdleLatestSession(user string, uid uint32, env string) (Session, error) {
	var busy int
	err := db.r.QueryRow(`SELECT count(*) FROM tasks t JOIN sessions s ON s.id = t.session_id
		WHERE t.status IN ('queued', 'running') AND s.unix_user = ? AND s.unix_uid = ? AND s.environment = ?`,
		user, uid, env).Scan(&busy)
	if err != nil {
		return Session{}, fmt.Errorf("live tasks of %s: %w", user, err)
	}
	if busy > 0 {
		return Session{}, fmt.Errorf("%s has %d tasks queued or running: %w", user, busy, ErrNotFound)
	}
	row := db.r.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE unix_user = ? AND unix_uid = ? AND environment = ?
		ORDER BY updated_at DESC, id DESC LIMIT 1`, user, uid, env)
	s, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("no session of %s: %w", user, ErrNotFound)
	}
	if err != nil {
		return Session{}, err
	}
	return db.pending.session(s), nil
}
