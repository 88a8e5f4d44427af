package store

import (
	"database/sql"
	"fmt"
)

// migrations are applied in order, each in its own transaction; the
// database's PRAGMA user_version is the number applied. Append to the list,
// never edit an entry that has shipped.
var migrations = []string{
	// 1: sessions, tasks and their events.
	`CREATE TABLE sessions (
		id               TEXT PRIMARY KEY,
		unix_user        TEXT NOT NULL,
		agentic_tool     TEXT NOT NULL,
		cwd              TEXT NOT NULL,
		model            TEXT NOT NULL DEFAULT '',
		permission_mode  TEXT NOT NULL DEFAULT '',
		status           TEXT NOT NULL DEFAULT '',
		agent_session_id TEXT NOT NULL DEFAULT '',
		created_at       INTEGER NOT NULL,
		updated_at       INTEGER NOT NULL
	) STRICT;
	CREATE INDEX sessions_by_created ON sessions (created_at, id);
	CREATE INDEX sessions_by_user ON sessions (unix_user, created_at, id);

	CREATE TABLE tasks (
		id         TEXT PRIMARY KEY,
		session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		unix_user  TEXT NOT NULL,
		prompt     TEXT NOT NULL,
		status     TEXT NOT NULL CHECK (status IN
			('queued', 'running', 'completed', 'failed', 'cancelled', 'timeout', 'interrupted')),
		result     TEXT CHECK (result IS NULL OR json_valid(result)),
		error      TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		started_at INTEGER NOT NULL DEFAULT 0,
		ended_at   INTEGER NOT NULL DEFAULT 0
	) STRICT;
	CREATE INDEX tasks_by_session ON tasks (session_id, created_at, id);
	CREATE INDEX tasks_live ON tasks (status) WHERE status IN ('queued', 'running');

	CREATE TABLE events (
		task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
		sequence   INTEGER NOT NULL,
		timestamp  INTEGER NOT NULL,
		event_type TEXT NOT NULL,
		event_data TEXT,
		PRIMARY KEY (task_id, sequence)
	) STRICT, WITHOUT ROWID;`,

	// 2: the audit trail.
	`CREATE TABLE audit (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		time       INTEGER NOT NULL,
		action     TEXT NOT NULL,
		unix_user  TEXT NOT NULL DEFAULT '',
		session_id TEXT NOT NULL DEFAULT '',
		task_id    TEXT NOT NULL DEFAULT '',
		credential TEXT NOT NULL DEFAULT '',
		tool       TEXT NOT NULL DEFAULT '',
		mode       TEXT NOT NULL DEFAULT '',
		decision   TEXT NOT NULL DEFAULT '',
		reason     TEXT NOT NULL DEFAULT '',
		count      INTEGER NOT NULL DEFAULT 0
	) STRICT;
	CREATE INDEX audit_by_time ON audit (time);`,

	// 3: the owner's uid beside the name. NULL: written before uids were
	// recorded, not yet adopted (Adopt); -1: no account had the name
	// when adopted (an orphan, never anyone's).
	`ALTER TABLE sessions ADD COLUMN unix_uid INTEGER;
	ALTER TABLE tasks ADD COLUMN unix_uid INTEGER;
	ALTER TABLE audit ADD COLUMN uid INTEGER;
	CREATE INDEX sessions_by_owner ON sessions (unix_user, unix_uid);
	CREATE INDEX tasks_by_owner ON tasks (unix_user, unix_uid);`,

	// 4: retention finds ended tasks and stale sessions by age.
	`CREATE INDEX tasks_by_ended ON tasks (ended_at, id) WHERE ended_at > 0;
	CREATE INDEX sessions_by_updated ON sessions (updated_at);`,

	// 5: an agent CLI's raw line kept once per task however many events
	// were derived from it (event_raws, events.raw_id), and the bytes each
	// task's events hold (tasks.event_bytes), counted for the event quotas
	// and for retention's fair shares. Events stored before keep their raw
	// line inline; their bytes are counted here once.
	`CREATE TABLE event_raws (
		id      INTEGER PRIMARY KEY,
		task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
		hash    BLOB NOT NULL,
		raw     TEXT NOT NULL,
		UNIQUE (task_id, hash)
	) STRICT;
	ALTER TABLE events ADD COLUMN raw_id INTEGER;
	ALTER TABLE tasks ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;
	UPDATE tasks SET event_bytes = (SELECT coalesce(sum(length(CAST(event_data AS BLOB))), 0)
		FROM events WHERE events.task_id = tasks.id);`,

	// 6: a task whose events could not all be stored ends "incomplete",
	// with how many it dropped. SQLite cannot change a CHECK in place, so
	// the table is made anew and its rows copied (migrate turns foreign
	// keys off around it, so that dropping the old table takes no events
	// with it, and checks them before the commit).
	`CREATE TABLE tasks_new (
		id             TEXT PRIMARY KEY,
		session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		unix_user      TEXT NOT NULL,
		prompt         TEXT NOT NULL,
		status         TEXT NOT NULL CHECK (status IN
			('queued', 'running', 'completed', 'failed', 'cancelled', 'timeout', 'interrupted', 'incomplete')),
		result         TEXT CHECK (result IS NULL OR json_valid(result)),
		error          TEXT NOT NULL DEFAULT '',
		created_at     INTEGER NOT NULL,
		started_at     INTEGER NOT NULL DEFAULT 0,
		ended_at       INTEGER NOT NULL DEFAULT 0,
		unix_uid       INTEGER,
		event_bytes    INTEGER NOT NULL DEFAULT 0,
		dropped_events INTEGER NOT NULL DEFAULT 0
	) STRICT;
	INSERT INTO tasks_new (id, session_id, unix_user, prompt, status, result, error, created_at, started_at, ended_at, unix_uid, event_bytes)
		SELECT id, session_id, unix_user, prompt, status, result, error, created_at, started_at, ended_at, unix_uid, event_bytes FROM tasks;
	DROP TABLE tasks;
	ALTER TABLE tasks_new RENAME TO tasks;
	CREATE INDEX tasks_by_session ON tasks (session_id, created_at, id);
	CREATE INDEX tasks_live ON tasks (status) WHERE status IN ('queued', 'running');
	CREATE INDEX tasks_by_owner ON tasks (unix_user, unix_uid);
	CREATE INDEX tasks_by_ended ON tasks (ended_at, id) WHERE ended_at > 0;`,

	// 7: the model gateway's ledger: one row per model request, from the
	// provider's own usage fields. No foreign keys: what was spent is kept
	// after retention takes the task and its session.
	`CREATE TABLE ledger (
		id                 INTEGER PRIMARY KEY,
		at                 INTEGER NOT NULL,
		unix_user          TEXT NOT NULL,
		unix_uid           INTEGER,
		session_id         TEXT NOT NULL DEFAULT '',
		task_id            TEXT NOT NULL DEFAULT '',
		agent              TEXT NOT NULL DEFAULT '',
		api                TEXT NOT NULL,
		model              TEXT NOT NULL DEFAULT '',
		input_tokens       INTEGER NOT NULL DEFAULT 0,
		output_tokens      INTEGER NOT NULL DEFAULT 0,
		cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
		cache_write_tokens INTEGER NOT NULL DEFAULT 0,
		cost_micros        INTEGER NOT NULL DEFAULT 0,
		status             INTEGER NOT NULL DEFAULT 0,
		streamed           INTEGER NOT NULL DEFAULT 0,
		error              TEXT NOT NULL DEFAULT ''
	) STRICT;
	CREATE INDEX ledger_by_user ON ledger (unix_user, at);
	CREATE INDEX ledger_by_task ON ledger (task_id) WHERE task_id != '';`,

	// 8: the environment a session runs in ('' : the host). Additive: a
	// session of an earlier release ran on the host, which '' says.
	`ALTER TABLE sessions ADD COLUMN environment TEXT NOT NULL DEFAULT '';`,
}

// migrate applies the migrations the database has not seen yet.
func (db *DB) migrate() error {
	var v int
	if err := db.w.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("%w: schema version %d, this program knows %d", ErrSchemaTooNew, v, len(migrations))
	}
	if v == len(migrations) {
		return nil
	}
	// A migration that makes a table anew drops the old one; with foreign
	// keys on, that would delete what refers to it. The pragma is a no-op
	// inside a transaction, so it is set on the (single) writer
	// connection around them; apply checks the keys before each commit.
	if _, err := db.w.Exec("PRAGMA foreign_keys = OFF"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _, _ = db.w.Exec("PRAGMA foreign_keys = ON") }()
	for i := v; i < len(migrations); i++ {
		if err := db.apply(i+1, migrations[i]); err != nil {
			return err
		}
	}
	return nil
}

// foreignKeyCheck fails when a row refers to one that is not there.
func foreignKeyCheck(tx *sql.Tx) error {
	rows, err := tx.Query("PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table string
		var rowid sql.NullInt64
		var parent string
		var fkid int
		_ = rows.Scan(&table, &rowid, &parent, &fkid)
		return fmt.Errorf("foreign key check: a row of %s refers to a missing %s", table, parent)
	}
	return rows.Err()
}

// apply runs migration version in one transaction with the version bump,
// so a crash leaves the database at the old version or the new, never
// between.
func (db *DB) apply(version int, stmt string) error {
	return db.tx(func(tx *sql.Tx) error {
		if _, err := tx.Exec(stmt); err != nil {
			return fmt.Errorf("migration %d: %w", version, err)
		}
		if err := foreignKeyCheck(tx); err != nil {
			return fmt.Errorf("migration %d: %w", version, err)
		}
		if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
			return fmt.Errorf("migration %d: set version: %w", version, err)
		}
		return nil
	})
}

// tx runs fn in a write transaction, committing when it returns nil.
func (db *DB) tx(fn func(*sql.Tx) error) error {
	tx, err := db.w.Begin()
	if err != nil {
		return fmt.Errorf("begin: %w", db.noted(err))
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return db.noted(err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", db.noted(err))
	}
	db.space.wrote()
	return nil
}
