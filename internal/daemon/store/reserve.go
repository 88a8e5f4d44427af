package store

import (
	"errors"
	"os"
)

// reserveBytes is the room the store keeps aside, as a file beside the
// database, for the ends of tasks: when the filesystem fills anyway (a
// floor of 0, another writer on it), the reserve is given up so that a
// task's end is written rather than kept in memory, where a daemon
// stopping would lose it. A few page writes and their WAL frames fit.
const reserveBytes = 1 << 20

func (db *DB) reservePath() string { return db.path + "-reserve" }

// keepReserve makes the reserve file when it is missing and the
// filesystem has room for it several times over; a write it cannot
// finish leaves no partial file.
func (db *DB) keepReserve() {
	p := db.reservePath()
	if _, err := os.Stat(p); err == nil {
		return
	}
	if free, err := db.space.statfs(db.space.dir); err != nil || free < 4*reserveBytes {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	_, err = f.Write(make([]byte, reserveBytes)) // written, not sparse: the blocks are taken now
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(p)
	}
}

// releaseReserve gives the reserve's room back to the filesystem and
// reports whether there was one.
func (db *DB) releaseReserve() bool {
	err := os.Remove(db.reservePath())
	if err == nil {
		db.space.log.Warn("store: reserve released to write task ends", "dir", db.space.dir, "bytes", reserveBytes)
	}
	return err == nil
}
