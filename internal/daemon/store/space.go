package store

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// ErrFull is wrapped by the error of a write the store could not make
// for want of space: SQLite said the disk is full, or the state
// directory is below the free-space floor the write must keep.
var ErrFull = errors.New("storage full")

// minClear is the free space a filesystem needs, beside the floor, for
// an episode of a full store to be over: a write that fits in a page
// SQLite already had is no sign that space has come back.
const minClear = 1 << 20

// Space is the state of the store's filesystem, as metrics and health
// show it.
type Space struct {
	Dir      string    // the state directory
	Free     int64     // bytes free for the daemon (-1: unknown)
	Floor    int64     // store.min_free_bytes (0: none)
	Full     bool      // in an episode: writes failed or free space is below the floor
	Since    time.Time // when the episode began
	Reason   string    // what began it
	Episodes int64     // episodes since the store opened
	Failures int64     // writes refused for want of space
	Pending  int       // task and session statuses kept in memory until written
}

// space tracks the filesystem under the store. Its lock is never held
// across a write.
type space struct {
	mu       sync.Mutex
	dir      string
	floor    int64
	log      *slog.Logger
	full     bool
	since    time.Time
	reason   string
	episodes int64
	failures int64
	statfs   func(dir string) (int64, error)
}

func newSpace(path string) *space {
	return &space{dir: filepath.Dir(path), log: slog.Default(), statfs: freeBytes}
}

// SetFloor sets the free space (bytes, 0: none) below which the store
// refuses new work (RoomForWork) and, below half of it, events: the
// other half is kept for the ends of the tasks that run.
func (db *DB) SetFloor(n int64) {
	db.space.mu.Lock()
	db.space.floor = max(n, 0)
	db.space.mu.Unlock()
}

// SetLog sets where the store says that an episode began or ended.
func (db *DB) SetLog(log *slog.Logger) {
	if log != nil {
		db.space.mu.Lock()
		db.space.log = log
		db.space.mu.Unlock()
	}
}

// Space reports the filesystem's state now.
func (db *DB) Space() Space {
	free, err := db.space.statfs(db.space.dir)
	if err != nil {
		free = -1
	}
	s := db.space
	s.mu.Lock()
	defer s.mu.Unlock()
	return Space{Dir: s.dir, Free: free, Floor: s.floor, Full: s.full, Since: s.since, Reason: s.reason,
		Episodes: s.episodes, Failures: s.failures, Pending: db.pending.count()}
}

// RoomForWork returns an error wrapping ErrFull when new work (a
// session, a task) should be refused: an episode is on, or the free
// space is below the floor.
func (db *DB) RoomForWork() error {
	return db.room(1)
}

// roomForEvents is RoomForWork for a running task's events: they stop
// at half the floor, so that the tasks' ends can still be written.
func (db *DB) roomForEvents() error {
	return db.room(2)
}

// room checks the free space against floor/div.
func (db *DB) room(div int64) error {
	s := db.space
	s.mu.Lock()
	floor, full, reason := s.floor/div, s.full, s.reason
	s.mu.Unlock()
	if full && div == 1 {
		return fmt.Errorf("%w: %s (new tasks wait until it has room)", ErrFull, reason)
	}
	if floor == 0 {
		return nil
	}
	free, err := s.statfs(s.dir)
	if err != nil || free >= floor {
		return nil
	}
	err = fmt.Errorf("%w: %s has %d bytes free, below %d (store.min_free_bytes)", ErrFull, s.dir, free, s.floor)
	db.space.failed(err)
	return err
}

// noted is err as the store returns it: a write SQLite could not make
// for want of space wraps ErrFull and begins an episode; a write made
// with room to spare ends one.
func (db *DB) noted(err error) error {
	switch {
	case err == nil:
		db.space.wrote()
		return nil
	case errors.Is(err, ErrFull):
		return err
	case isFull(err):
		err = fmt.Errorf("%w: the store in %s could not write: %w", ErrFull, db.space.dir, err)
		db.space.failed(err)
		return err
	}
	return err
}

// isFull reports whether SQLite (or the kernel under it) said the disk is full.
func isFull(err error) bool {
	return sqliteCode(err)&0xff == sqlite3.SQLITE_FULL || errors.Is(err, syscall.ENOSPC)
}

// failed counts a refused write and, the first time in an episode,
// begins it with one warning.
func (s *space) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	if s.full {
		return
	}
	s.full, s.since, s.reason = true, time.Now(), strings.TrimPrefix(err.Error(), ErrFull.Error()+": ")
	s.episodes++
	s.log.Warn("store cannot write: the state directory is full; new tasks are refused (storage_full) and what cannot be written is kept in memory until space returns",
		"state_dir", s.dir, "err", err, "episode", s.episodes)
}

// wrote ends an episode when the filesystem has room again: above the
// floor and minClear.
func (s *space) wrote() {
	s.mu.Lock()
	full, floor := s.full, s.floor
	s.mu.Unlock()
	if !full {
		return
	}
	free, err := s.statfs(s.dir)
	if err != nil || free < floor+minClear {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		s.full = false
		s.log.Info("store writes again", "state_dir", s.dir, "free_bytes", free, "episode", s.episodes,
			"lasted_s", int64(time.Since(s.since).Seconds()))
	}
}

// freeBytes is what an unprivileged writer may still use on dir's
// filesystem (the daemon runs as its own user: root's reserve is not its).
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}
