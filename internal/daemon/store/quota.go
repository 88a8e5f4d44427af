package store

import "fmt"

// CountSessions is how many sessions user's account uid holds (a quota).
func (db *DB) CountSessions(user string, uid uint32) (int, error) {
	var n int
	err := db.r.QueryRow(`SELECT count(*) FROM sessions WHERE unix_user = ? AND unix_uid = ?`, user, uid).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sessions of %s: %w", user, err)
	}
	return n, nil
}

// CountTasks is how many tasks session holds (a quota).
func (db *DB) CountTasks(session string) (int, error) {
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM tasks WHERE session_id = ?`, session).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks of %s: %w", session, err)
	}
	return n, nil
}
