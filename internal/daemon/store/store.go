// Package store is the daemon's embedded SQLite database: sessions, tasks,
// their streamed events and the audit trail, in one file under the state
// directory.
//
// It uses modernc.org/sqlite, a pure-Go SQLite, so the daemon builds with
// CGO_ENABLED=0 and stays a static binary.
//
// Durability: the database runs in WAL mode with synchronous=NORMAL. A
// commit is then durable across a crash of the process (SIGKILL, panic,
// OOM kill), which is the failure the daemon is designed for: the WAL is
// written before the commit returns and the kernel keeps it. Only a power
// loss or kernel crash can lose the last commits (never corrupt the file);
// synchronous=FULL would close that window at the price of an fsync per
// commit, which is what limits the event rate.
//
// Connections: all writes go through one *sql.DB limited to a single
// connection, so writers queue in Go instead of spinning on SQLITE_BUSY and
// every write transaction starts IMMEDIATE. Reads go through a second pool
// of query-only connections, which WAL lets run beside the writer.
package store

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"syscall"
	"time"

	"modernc.org/sqlite"

	"github.com/agor-sh/agor/internal/daemon/events"
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors callers test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrDuplicate is returned by Append for a (task, sequence) already
	// stored; the stored event is left as it was.
	ErrDuplicate = fmt.Errorf("store: %w", events.ErrDuplicate)
	// ErrInvalid is returned for a value the store refuses (an unknown
	// task status, event data that is not JSON).
	ErrInvalid = errors.New("invalid value")
	// ErrTaskEnded is returned when changing the status of a task that
	// has already ended.
	ErrTaskEnded = errors.New("task already ended")
	// ErrSchemaTooNew is returned by Open for a database written by a
	// newer daemon than this one.
	ErrSchemaTooNew = errors.New("database schema is newer than this program")
)

// busyTimeout is how long a connection waits for a lock held by another
// connection (the read pool during a checkpoint, another process) before
// failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// DB is the store. It is safe for concurrent use.
type DB struct {
	path    string
	w       *sql.DB // the single writer connection
	r       *sql.DB // query-only read pool
	space   *space  // the filesystem under it (space.go)
	pending pending // statuses a full store could not write (pending.go)
}

// Open opens or creates the database at path and brings its schema up to
// date. It does not touch tasks: the daemon calls MarkInterrupted once at
// start, when no task of the previous run can still be live.
func Open(path string) (*DB, error) {
	if err := private(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w, err := sql.Open("sqlite", dsn(path, "_txlock=immediate", "journal_mode(WAL)", "synchronous(NORMAL)"))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	db := &DB{w: w, path: path, space: newSpace(path)}
	err = db.migrate()
	if err == nil {
		err = db.incrementalVacuum()
	}
	if err == nil {
		db.keepReserve()
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn(path, "", "query_only(1)"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	r.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	db.r = r
	return db, nil
}

// private makes the store's files 0600 whatever the umask: they hold
// every person's prompts and transcripts. SQLite gives the WAL and its
// index the database file's mode when it creates them, so the database is
// made (or narrowed) first, and WAL files an earlier run left are narrowed.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if err := os.Chmod(side, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// dsn is the modernc.org/sqlite data source for path: the pragmas are run
// on every new connection.
func dsn(path, extra string, pragmas ...string) string {
	q := url.Values{}
	for _, p := range append([]string{fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()), "foreign_keys(1)"}, pragmas...) {
		q.Add("_pragma", p)
	}
	s := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	if extra != "" {
		s += "&" + extra
	}
	return s
}

// exec runs a write on the writer connection; a write refused for want
// of space wraps ErrFull (space.go).
func (db *DB) exec(query string, args ...any) (sql.Result, error) {
	res, err := db.w.Exec(query, args...)
	return res, db.noted(err)
}

// Close closes the database.
func (db *DB) Close() error {
	return errors.Join(db.r.Close(), db.w.Close())
}

// Check runs SQLite's integrity check and returns an error describing
// what it found unless the database is intact.
func (db *DB) Check() error {
	rows, err := db.r.Query("PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %q", problems)
	}
	return nil
}

// sqliteCode returns the extended result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func isPrimaryKey(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

func isForeignKey(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// nanos and fromNanos store times as Unix nanoseconds; 0 is "not set".
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// now is the current time at the precision stored.
func now() time.Time { return time.Now().UTC() }
