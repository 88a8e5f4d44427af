package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TaskStatus is where a task is in its life.
type TaskStatus string

// Task statuses. Queued and Running are live; the rest are final.
const (
	Queued      TaskStatus = "queued"
	Running     TaskStatus = "running"
	Completed   TaskStatus = "completed"
	Failed      TaskStatus = "failed"
	Cancelled   TaskStatus = "cancelled"
	Timeout     TaskStatus = "timeout"
	Interrupted TaskStatus = "interrupted" // live when the daemon stopped
	// Incomplete: the agent's turn ended, but not all of its events
	// could be stored (the store was full); Task.Dropped says how many.
	Incomplete TaskStatus = "incomplete"
)

// Final reports whether a task in status st has ended.
func (st TaskStatus) Final() bool {
	switch st {
	case Completed, Failed, Cancelled, Timeout, Interrupted, Incomplete:
		return true
	}
	return false
}

func (st TaskStatus) valid() bool { return st == Queued || st == Running || st.Final() }

// Task is one prompt run in a session.
type Task struct {
	ID        string
	SessionID string
	UnixUser  string
	UID       int64 // UnixUser's uid, as its session's; NoUID when not known
	Prompt    string
	Status    TaskStatus
	Result    json.RawMessage // nil until set
	Error     string
	CreatedAt time.Time
	StartedAt time.Time // zero until running
	EndedAt   time.Time // zero until final
	Dropped   int64     // events the store could not keep (Incomplete)
}

// Finish is a task's new status, as FinishTask records it.
type Finish struct {
	Status  TaskStatus
	Result  json.RawMessage // nil keeps the stored one
	Error   string
	Dropped int64     // events not stored
	At      time.Time // when it happened (zero: now)
}

const taskCols = `id, session_id, unix_user, prompt, status, result, error, created_at, started_at, ended_at, coalesce(unix_uid, -1), dropped_events`

const insertTaskCols = `id, session_id, unix_user, prompt, status, result, error, created_at, started_at, ended_at, unix_uid`

// CreateTask stores t (status Queued unless given; CreatedAt now unless
// given) and returns it as stored. Its session must exist (ErrNotFound);
// an ID already stored is ErrExists.
func (db *DB) CreateTask(t Task) (Task, error) {
	if t.ID == "" || t.SessionID == "" || t.UnixUser == "" {
		return Task{}, fmt.Errorf("create task: %w: id, session_id and unix_user are required", ErrInvalid)
	}
	if t.Status == "" {
		t.Status = Queued
	}
	if !t.Status.valid() {
		return Task{}, fmt.Errorf("create task %q: %w: status %q", t.ID, ErrInvalid, t.Status)
	}
	if t.Result != nil && !json.Valid(t.Result) {
		return Task{}, fmt.Errorf("create task %q: %w: result is not JSON", t.ID, ErrInvalid)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	if t.Status == Running && t.StartedAt.IsZero() {
		t.StartedAt = t.CreatedAt
	}
	_, err := db.exec(`INSERT INTO tasks (`+insertTaskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.SessionID, t.UnixUser, t.Prompt, t.Status, jsonArg(t.Result), t.Error,
		nanos(t.CreatedAt), nanos(t.StartedAt), nanos(t.EndedAt), t.UID)
	switch {
	case isPrimaryKey(err):
		return Task{}, fmt.Errorf("create task %q: %w", t.ID, ErrExists)
	case isForeignKey(err):
		return Task{}, fmt.Errorf("create task %q: session %q: %w", t.ID, t.SessionID, ErrNotFound)
	case err != nil:
		return Task{}, fmt.Errorf("create task %q: %w", t.ID, err)
	}
	return readTask(db.w.QueryRow(`SELECT `+taskCols+` FROM tasks WHERE id = ?`, t.ID))
}

// SetTaskStatus moves a live task to status, recording result (nil keeps
// the stored one) and errMsg. Running sets StartedAt, a final status sets
// EndedAt. A task that has already ended keeps its status: ErrTaskEnded.
func (db *DB) SetTaskStatus(id string, status TaskStatus, result json.RawMessage, errMsg string) error {
	return db.FinishTask(id, Finish{Status: status, Result: result, Error: errMsg})
}

// FinishTask is SetTaskStatus with the events the task dropped. When the
// store is full the status is kept in memory, shown by reads and written
// by Reconcile once space returns; the error then wraps ErrFull.
func (db *DB) FinishTask(id string, f Finish) error {
	if !f.Status.valid() {
		return fmt.Errorf("set task %q status: %w: status %q", id, ErrInvalid, f.Status)
	}
	if f.Result != nil && !json.Valid(f.Result) {
		return fmt.Errorf("set task %q status: %w: result is not JSON", id, ErrInvalid)
	}
	if f.At.IsZero() {
		f.At = now()
	}
	err := db.writeFinish(id, f)
	if errors.Is(err, ErrFull) {
		db.pending.keepTask(id, f)
		return fmt.Errorf("%w (kept in memory until it can be written)", err)
	}
	return err
}

func (db *DB) writeFinish(id string, f Finish) error {
	t := nanos(f.At)
	res, err := db.exec(`UPDATE tasks SET status = ?, result = coalesce(?, result), error = ?, dropped_events = ?,
		started_at = CASE WHEN started_at = 0 AND ? = 'running' THEN ? ELSE started_at END,
		ended_at = CASE WHEN ? THEN ? ELSE 0 END
		WHERE id = ? AND status IN ('queued', 'running')`,
		f.Status, jsonArg(f.Result), f.Error, f.Dropped, f.Status, t, f.Status.Final(), t, id)
	if err != nil {
		return fmt.Errorf("set task %q status: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	cur, err := db.GetTask(id)
	if err != nil {
		return fmt.Errorf("set task status: %w", err)
	}
	return fmt.Errorf("set task %q %s: %w (%s)", id, f.Status, ErrTaskEnded, cur.Status)
}

// GetTask returns task id, or ErrNotFound.
func (db *DB) GetTask(id string) (Task, error) {
	t, err := scanTask(db.r.QueryRow(`SELECT `+taskCols+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("get task %q: %w", id, err)
	}
	return db.pending.task(t), nil
}

// ListTasks returns a session's tasks, oldest first, at most limit (<= 0:
// all), after the task with ID after ("" starts at the first; an unknown
// after is ErrNotFound).
func (db *DB) ListTasks(sessionID string, limit int, after string) ([]Task, error) {
	q := `SELECT ` + taskCols + ` FROM tasks WHERE session_id = ?`
	args := []any{sessionID}
	if after != "" {
		if _, err := db.GetTask(after); err != nil {
			return nil, fmt.Errorf("list tasks after: %w", err)
		}
		q += ` AND (created_at, id) > (SELECT created_at, id FROM tasks WHERE id = ?)`
		args = append(args, after)
	}
	q += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, sqlLimit(limit))
	rows, err := db.r.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	list, err := collect(rows, scanTask)
	for i := range list {
		list[i] = db.pending.task(list[i])
	}
	return list, err
}

// MarkInterrupted ends every task left queued or running as Interrupted
// and returns how many there were. The daemon calls it once at start,
// before it accepts work: a live task in the database then belongs to a
// daemon that is gone. Open does not call it, so that opening the store
// (tests, tools) never changes tasks.
func (db *DB) MarkInterrupted() (int, error) {
	return db.MarkInterruptedBefore(now())
}

// MarkInterruptedBefore is MarkInterrupted for the tasks made at or
// before t, except those named (a new daemon takes those over from their
// executors): a daemon that could not mark them at start (a full disk)
// marks them later without touching its own.
func (db *DB) MarkInterruptedBefore(t time.Time, except ...string) (int, error) {
	q := `UPDATE tasks SET status = 'interrupted', ended_at = ?
		WHERE status IN ('queued', 'running') AND created_at <= ?`
	args := []any{nanos(now()), nanos(t)}
	if len(except) > 0 {
		q += ` AND id NOT IN (` + strings.TrimSuffix(strings.Repeat("?,", len(except)), ",") + `)`
		for _, id := range except {
			args = append(args, id)
		}
	}
	res, err := db.exec(q, args...)
	if err != nil {
		return 0, fmt.Errorf("mark tasks interrupted: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// RunningBefore lists the tasks left running that were made at or
// before t (by the last daemon: its executors may still run them).
func (db *DB) RunningBefore(t time.Time) ([]Task, error) {
	rows, err := db.r.Query(`SELECT `+taskCols+` FROM tasks WHERE status = 'running' AND created_at <= ? ORDER BY created_at, id`, nanos(t))
	if err != nil {
		return nil, fmt.Errorf("list running tasks: %w", err)
	}
	return collect(rows, scanTask)
}

// RunningTaskOf is the session's running task (its newest, should there
// be more); ErrNotFound when none runs.
func (db *DB) RunningTaskOf(session string) (Task, error) {
	row := db.r.QueryRow(`SELECT `+taskCols+` FROM tasks WHERE session_id = ? AND status = 'running'
		ORDER BY created_at DESC, id DESC LIMIT 1`, session)
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("running task of session %s: %w", session, ErrNotFound)
	}
	return t, err
}

// LastSequence is the highest sequence stored of task's events (-1: none).
func (db *DB) LastSequence(task string) (int64, error) {
	var n int64
	if err := db.r.QueryRow(`SELECT coalesce(max(sequence), -1) FROM events WHERE task_id = ?`, task).Scan(&n); err != nil {
		return 0, fmt.Errorf("last sequence of %s: %w", task, err)
	}
	return n, nil
}

// SettleSessions gives every session still "running" or "queued" that
// has no live task the status of its latest task ("idle" without one),
// and returns how many there were. The daemon calls it at start, after
// MarkInterrupted: a session whose last update a full store could not
// write, or a daemon that died, left, would otherwise stay "running".
func (db *DB) SettleSessions() (int, error) {
	res, err := db.exec(`UPDATE sessions SET updated_at = ?, status = coalesce((SELECT t.status FROM tasks t
			WHERE t.session_id = sessions.id ORDER BY t.created_at DESC, t.id DESC LIMIT 1), 'idle')
		WHERE status IN ('queued', 'running') AND NOT EXISTS (SELECT 1 FROM tasks t
			WHERE t.session_id = sessions.id AND t.status IN ('queued', 'running'))`, nanos(now()))
	if err != nil {
		return 0, fmt.Errorf("settle sessions: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func readTask(row *sql.Row) (Task, error) {
	t, err := scanTask(row)
	if err != nil {
		return Task{}, fmt.Errorf("read task: %w", err)
	}
	return t, nil
}

func scanTask(r scanner) (Task, error) {
	var t Task
	var result sql.NullString
	var created, started, ended int64
	err := r.Scan(&t.ID, &t.SessionID, &t.UnixUser, &t.Prompt, &t.Status, &result, &t.Error,
		&created, &started, &ended, &t.UID, &t.Dropped)
	if result.Valid {
		t.Result = json.RawMessage(result.String)
	}
	t.CreatedAt, t.StartedAt, t.EndedAt = fromNanos(created), fromNanos(started), fromNanos(ended)
	return t, err
}

// jsonArg stores nil JSON as NULL.
func jsonArg(m json.RawMessage) any {
	if m == nil {
		return nil
	}
	return string(m)
}
