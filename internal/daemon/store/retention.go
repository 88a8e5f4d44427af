package store

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Retention says what Sweep removes. A zero age or size is no bound.
// Ages are measured on the daemon's own clock: a task's end (ended_at),
// a session's last change (updated_at); an event's own timestamp comes
// from the executor and is not trusted for this.
type Retention struct {
	EventMaxAge   time.Duration // events of tasks that ended longer ago (the task row stays)
	TaskMaxAge    time.Duration // tasks that ended longer ago, with their events
	SessionMaxAge time.Duration // sessions untouched this long with no live task, with theirs
	AuditMaxAge   time.Duration // audit rows
	MaxBytes      int64         // past it, ended tasks of those over their share go until the pages in use fit
}

// Swept is what one Sweep removed, and the store's size around it.
type Swept struct {
	Sessions, Tasks, Events, Audit int64
	BytesBefore, BytesAfter        int64 // the files on disk (database and WAL)
	Took                           time.Duration
}

// sweepBatch is how many tasks one write transaction removes, so that a
// sweep of millions of events never holds the writer for long.
const sweepBatch = 200

// sizeBatch is how many of the oldest tasks go at a time past the size
// bound, between two looks at the size.
const sizeBatch = 5

// Sweep removes what r says has expired, never a queued or running task
// nor a session that has one, then returns freed pages to the file
// system (incremental vacuum) and truncates the WAL.
func (db *DB) Sweep(r Retention) (Swept, error) {
	t0 := time.Now()
	sw := Swept{BytesBefore: db.Size()}
	steps := []func(Retention, *Swept) error{db.sweepEvents, db.sweepTasks, db.sweepSessions, db.sweepAudit, db.sweepSize}
	for _, step := range steps {
		if err := step(r, &sw); err != nil {
			return sw, err
		}
	}
	if err := db.Vacuum(); err != nil {
		return sw, err
	}
	sw.BytesAfter, sw.Took = db.Size(), time.Since(t0)
	return sw, nil
}

func ignoreNoProgress(err error) error {
	if errors.Is(err, errNoProgress) {
		return nil
	}
	return err
}

func cutoff(age time.Duration) int64 { return nanos(now().Add(-age)) }

// sweepEvents drops the events of tasks ended before the event age,
// a batch of tasks at a time, in the order they ended.
func (db *DB) sweepEvents(r Retention, sw *Swept) error {
	if r.EventMaxAge <= 0 {
		return nil
	}
	var at int64
	var id string
	for {
		ids, lastAt, err := db.endedTasks(`ended_at < ? AND (ended_at, id) > (?, ?)`, cutoff(r.EventMaxAge), at, id)
		if err != nil || len(ids) == 0 {
			return err
		}
		n, err := db.dropEvents(ids)
		if err != nil {
			return err
		}
		sw.Events += n
		at, id = lastAt, ids[len(ids)-1]
	}
}

// sweepTasks drops tasks ended before the task age, with their events.
func (db *DB) sweepTasks(r Retention, sw *Swept) error {
	if r.TaskMaxAge <= 0 {
		return nil
	}
	for {
		ids, _, err := db.endedTasks(`ended_at < ?`, cutoff(r.TaskMaxAge))
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := db.deleteTasks(ids, sw); err != nil {
			return ignoreNoProgress(err)
		}
	}
}

// endedTasks lists up to sweepBatch ended tasks matching where, oldest
// end first, and the end time of the last.
func (db *DB) endedTasks(where string, args ...any) ([]string, int64, error) {
	return db.endedTasksN(sweepBatch, where, args...)
}

func (db *DB) endedTasksN(limit int, where string, args ...any) ([]string, int64, error) {
	rows, err := db.w.Query(`SELECT id, ended_at FROM tasks WHERE ended_at > 0 AND `+where+
		` ORDER BY ended_at, id LIMIT `+fmt.Sprint(limit), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("sweep: list tasks: %w", err)
	}
	defer rows.Close()
	var ids []string
	var at int64
	for rows.Next() {
		var id string
		if err := rows.Scan(&id, &at); err != nil {
			return nil, 0, fmt.Errorf("sweep: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, at, rows.Err()
}

// deleteTasks removes tasks ids and their events in one transaction;
// errNoProgress when none of them went (a loop over batches stops).
func (db *DB) deleteTasks(ids []string, sw *Swept) error {
	before := sw.Tasks
	err := db.tx(func(tx *sql.Tx) error {
		ev, err := execIn(tx, `DELETE FROM events WHERE task_id IN ()`, ids)
		if err != nil {
			return err
		}
		n, err := execIn(tx, `DELETE FROM tasks WHERE status NOT IN ('queued', 'running') AND id IN ()`, ids)
		sw.Events, sw.Tasks = sw.Events+ev, sw.Tasks+n
		return err
	})
	if err == nil && sw.Tasks == before {
		return errNoProgress
	}
	return err
}

// errNoProgress ends a sweep loop whose batch removed nothing.
var errNoProgress = errors.New("sweep: no progress")

// dropEvents removes the events of tasks ids, and their raw lines, and
// says the tasks hold no event bytes any more.
func (db *DB) dropEvents(ids []string) (int64, error) {
	var n int64
	err := db.tx(func(tx *sql.Tx) error {
		var err error
		if n, err = execIn(tx, `DELETE FROM events WHERE task_id IN ()`, ids); err != nil {
			return err
		}
		if _, err = execIn(tx, `DELETE FROM event_raws WHERE task_id IN ()`, ids); err != nil {
			return err
		}
		_, err = execIn(tx, `UPDATE tasks SET event_bytes = 0 WHERE id IN ()`, ids)
		return err
	})
	return n, err
}

// execIn runs stmt with its "IN ()" holding one placeholder per id.
func execIn(tx *sql.Tx, stmt string, ids []string) (int64, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	res, err := tx.Exec(strings.Replace(stmt, "IN ()", "IN ("+marks+")", 1), args...)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	return res.RowsAffected()
}

// sweepSessions drops sessions untouched since the session age that have
// no live task, with their tasks and events.
func (db *DB) sweepSessions(r Retention, sw *Swept) error {
	if r.SessionMaxAge <= 0 {
		return nil
	}
	for {
		var ids []string
		rows, err := db.w.Query(`SELECT id FROM sessions s WHERE updated_at < ? AND NOT EXISTS
			(SELECT 1 FROM tasks t WHERE t.session_id = s.id AND t.status IN ('queued', 'running'))
			ORDER BY updated_at LIMIT 50`, cutoff(r.SessionMaxAge))
		if err == nil {
			ids, err = collect(rows, func(s scanner) (string, error) { var id string; return id, s.Scan(&id) })
		}
		if err != nil || len(ids) == 0 {
			return err
		}
		err = db.tx(func(tx *sql.Tx) error {
			ev, err := execIn(tx, `DELETE FROM events WHERE task_id IN (SELECT id FROM tasks WHERE session_id IN ())`, ids)
			if err != nil {
				return err
			}
			tk, err := execIn(tx, `DELETE FROM tasks WHERE session_id IN ()`, ids)
			if err != nil {
				return err
			}
			n, err := execIn(tx, `DELETE FROM sessions WHERE id IN ()`, ids)
			sw.Events, sw.Tasks, sw.Sessions = sw.Events+ev, sw.Tasks+tk, sw.Sessions+n
			return err
		})
		if err != nil {
			return err
		}
	}
}

func (db *DB) sweepAudit(r Retention, sw *Swept) error {
	if r.AuditMaxAge <= 0 {
		return nil
	}
	res, err := db.w.Exec(`DELETE FROM audit WHERE time < ?`, cutoff(r.AuditMaxAge))
	if err != nil {
		return fmt.Errorf("sweep audit: %w", err)
	}
	sw.Audit, _ = res.RowsAffected()
	return nil
}

// sweepSize takes ended work from whoever holds more than their share
// while the pages in use exceed the bound (the file itself shrinks at the
// vacuum that follows). A share is the bound divided among the people
// with tasks stored; each round takes the oldest ended tasks of the one
// furthest over. Someone within their share loses nothing, even when the
// store stays over the bound: one person's flood never costs another
// their history. Running tasks count toward their person's holding but
// are never removed.
func (db *DB) sweepSize(r Retention, sw *Swept) error {
	if r.MaxBytes <= 0 {
		return nil
	}
	for {
		used, err := db.usedBytes()
		if err != nil || used <= r.MaxBytes {
			return err
		}
		o, ok, err := db.furthestOver(r.MaxBytes, used)
		if err != nil || !ok {
			return err // nobody over their share has ended work left
		}
		ids, _, err := db.endedTasksN(sizeBatch, `unix_user = ? AND unix_uid IS ?`, o.user, o.uid) // small batches: stop near the bound
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := db.deleteTasks(ids, sw); err != nil {
			return ignoreNoProgress(err)
		}
	}
}

// holder is a person as the store owns tasks: a name and the uid it had
// (NULL before adoption).
type holder struct {
	user string
	uid  sql.NullInt64
}

// furthestOver is the person holding the most past their share of bound
// who has ended tasks. What a person holds is their tasks' prompts and
// events as stored (Holdings), as a part of the used pages: indexes and
// page slack are spread over people as their data is, so a person holds
// used × held / (everyone's held), and is over when that passes
// bound / people.
func (db *DB) furthestOver(bound, used int64) (holder, bool, error) {
	var h holder
	err := db.w.QueryRow(`WITH o AS (`+holdings+`)
		SELECT unix_user, unix_uid FROM o
		WHERE ended > 0 AND held * 1.0 * ? > ? * 1.0 * (SELECT sum(held) FROM o) / (SELECT count(*) FROM o)
		ORDER BY held DESC LIMIT 1`, used, bound).Scan(&h.user, &h.uid)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("sweep: shares: %w", err)
	}
	return h, true, nil
}

// holdings sums, per person, the bytes of their tasks and how many ended.
const holdings = `SELECT unix_user, unix_uid,
	sum(event_bytes + length(CAST(prompt AS BLOB)) + coalesce(length(CAST(result AS BLOB)), 0)) AS held,
	sum(ended_at > 0) AS ended
	FROM tasks GROUP BY unix_user, unix_uid`

// Holding is what one person's tasks hold in the store.
type Holding struct {
	User  string
	UID   int64 // -1 before adoption
	Bytes int64
}

// Holdings lists what each person's tasks hold (prompts, results and
// events as stored), most first: retention's measure of shares.
func (db *DB) Holdings() ([]Holding, error) {
	rows, err := db.r.Query(`SELECT unix_user, coalesce(unix_uid, -1), held FROM (` + holdings + `) ORDER BY held DESC`)
	if err != nil {
		return nil, fmt.Errorf("holdings: %w", err)
	}
	return collect(rows, func(s scanner) (Holding, error) {
		var h Holding
		return h, s.Scan(&h.User, &h.UID, &h.Bytes)
	})
}

// usedBytes is the size of the pages that hold data (not the free list).
func (db *DB) usedBytes() (int64, error) {
	var pages, free, size int64
	err := db.w.QueryRow(`SELECT p.page_count, f.freelist_count, s.page_size FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s`).Scan(&pages, &free, &size)
	if err != nil {
		return 0, fmt.Errorf("store size: %w", err)
	}
	return (pages - free) * size, nil
}

// Vacuum gives the free pages back to the file system and truncates the
// WAL, so that what was deleted leaves the disk.
func (db *DB) Vacuum() error {
	rows, err := db.w.Query(`PRAGMA incremental_vacuum`)
	if err != nil {
		return fmt.Errorf("incremental vacuum: %w", err)
	}
	for rows.Next() { // each step frees pages; stop early and fewer go
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("incremental vacuum: %w", err)
	}
	if _, err := db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Size is the bytes the store's files hold on disk (database and WAL).
func (db *DB) Size() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(db.path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// incrementalVacuum turns on auto_vacuum=INCREMENTAL, which a database
// made before it (or by SQLite's default) only takes with a full VACUUM:
// done once, at the first start of this version. VACUUM runs outside any
// transaction and is atomic: a crash leaves the old file.
func (db *DB) incrementalVacuum() error {
	var mode int
	if err := db.w.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	if mode == 2 {
		return nil
	}
	if _, err := db.w.Exec(`PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	if _, err := db.w.Exec(`VACUUM`); err != nil {
		return fmt.Errorf("vacuum for auto_vacuum: %w", err)
	}
	return nil
}
