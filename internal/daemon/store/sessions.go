package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is one agent conversation of a Unix user.
type Session struct {
	ID       string
	UnixUser string
	// UID is the uid UnixUser's account had when the session was made;
	// NoUID when that is not known (see Adopt).
	UID            int64
	AgenticTool    string
	Cwd            string
	Model          string
	PermissionMode string
	Status         string
	AgentSessionID string
	// Environment is the environment the session's work runs in ("": the
	// host); set when it is made, never changed.
	Environment string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const sessionCols = `id, unix_user, agentic_tool, cwd, model, permission_mode, status, agent_session_id, created_at, updated_at, coalesce(unix_uid, -1), environment`

const insertSessionCols = `id, unix_user, agentic_tool, cwd, model, permission_mode, status, agent_session_id, created_at, updated_at, unix_uid, environment`

// CreateSession stores s and returns it with CreatedAt and UpdatedAt set
// (to now, unless given). An ID already stored is ErrExists.
func (db *DB) CreateSession(s Session) (Session, error) {
	if s.ID == "" || s.UnixUser == "" {
		return Session{}, fmt.Errorf("create session: %w: id and unix_user are required", ErrInvalid)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	_, err := db.exec(`INSERT INTO sessions (`+insertSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.UnixUser, s.AgenticTool, s.Cwd, s.Model, s.PermissionMode, s.Status, s.AgentSessionID,
		nanos(s.CreatedAt), nanos(s.UpdatedAt), s.UID, s.Environment)
	if isPrimaryKey(err) {
		return Session{}, fmt.Errorf("create session %q: %w", s.ID, ErrExists)
	}
	if err != nil {
		return Session{}, fmt.Errorf("create session %q: %w", s.ID, err)
	}
	s.CreatedAt, s.UpdatedAt = fromNanos(nanos(s.CreatedAt)), fromNanos(nanos(s.UpdatedAt))
	return s, nil
}

// GetSession returns session id, or ErrNotFound.
func (db *DB) GetSession(id string) (Session, error) {
	s, err := scanSession(db.r.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("get session %q: %w", id, err)
	}
	return db.pending.session(s), nil
}

// ListSessions returns user's sessions whatever their uid ("" lists
// every user's), oldest first, at most limit of them (limit <= 0: all).
// after is the ID of the last session of the previous page ("" starts at
// the first); an after that does not exist is ErrNotFound.
func (db *DB) ListSessions(user string, limit int, after string) ([]Session, error) {
	return db.listSessions(`(? = '' OR unix_user = ?)`, []any{user, user}, limit, after)
}

// ListSessionsOf is ListSessions for one account: the sessions of user
// made while the name was uid's. Those of an earlier account of the same
// name are left out.
func (db *DB) ListSessionsOf(user string, uid uint32, limit int, after string) ([]Session, error) {
	return db.listSessions(`unix_user = ? AND unix_uid = ?`, []any{user, uid}, limit, after)
}

func (db *DB) listSessions(where string, args []any, limit int, after string) ([]Session, error) {
	q := `SELECT ` + sessionCols + ` FROM sessions WHERE ` + where
	if after != "" {
		if _, err := db.GetSession(after); err != nil {
			return nil, fmt.Errorf("list sessions after: %w", err)
		}
		q += ` AND (created_at, id) > (SELECT created_at, id FROM sessions WHERE id = ?)`
		args = append(args, after)
	}
	q += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, sqlLimit(limit))
	rows, err := db.r.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	list, err := collect(rows, scanSession)
	for i := range list {
		list[i] = db.pending.session(list[i])
	}
	return list, err
}

// UpdateSession writes s's cwd, model, permission mode, status and agent
// session ID and sets UpdatedAt to now; the ID, user, tool and creation
// time never change. It returns the session as stored. When the store is
// full the update is kept in memory, shown by reads and written by
// Reconcile once space returns; the error then wraps ErrFull.
func (db *DB) UpdateSession(s Session) (Session, error) {
	s.UpdatedAt = now()
	out, err := db.writeSession(s)
	if errors.Is(err, ErrFull) {
		db.pending.keepSession(s)
		return Session{}, fmt.Errorf("%w (kept in memory until it can be written)", err)
	}
	return out, err
}

func (db *DB) writeSession(s Session) (Session, error) {
	res, err := db.exec(`UPDATE sessions SET cwd = ?, model = ?, permission_mode = ?, status = ?,
		agent_session_id = ?, updated_at = ? WHERE id = ?`,
		s.Cwd, s.Model, s.PermissionMode, s.Status, s.AgentSessionID, nanos(s.UpdatedAt), s.ID)
	if err != nil {
		return Session{}, fmt.Errorf("update session %q: %w", s.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Session{}, fmt.Errorf("update session %q: %w", s.ID, ErrNotFound)
	}
	return readSession(db.w.QueryRow(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`, s.ID))
}

func readSession(row *sql.Row) (Session, error) {
	s, err := scanSession(row)
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	return s, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanSession(r scanner) (Session, error) {
	var s Session
	var created, updated int64
	err := r.Scan(&s.ID, &s.UnixUser, &s.AgenticTool, &s.Cwd, &s.Model, &s.PermissionMode, &s.Status,
		&s.AgentSessionID, &created, &updated, &s.UID, &s.Environment)
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return s, err
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return out, nil
}

// sqlLimit maps "no limit" (<= 0) to SQLite's -1.
func sqlLimit(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
