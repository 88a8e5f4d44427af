package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

var _ events.Store = (*DB)(nil)

const insertEvent = `INSERT INTO events (task_id, sequence, timestamp, event_type, event_data) VALUES (?, ?, ?, ?, ?)`

// Append stores ev durably (events.Store). The events.Sink drops the
// duplicates it has seen itself; one that reaches the store anyway (the
// executor resending after a daemon restart, when the sink's memory is
// empty) is refused with an error wrapping ErrDuplicate and the stored
// event is kept. An event for a task not in the store is ErrNotFound.
func (db *DB) Append(ev apiwire.StoredEvent) error {
	if err := checkEvent(ev); err != nil {
		return err
	}
	_, err := db.w.Exec(insertEvent, ev.TaskID, ev.Sequence, ev.Timestamp, ev.Type, jsonArg(ev.Data))
	return eventErr(ev, err)
}

// AppendBatch stores evs in one transaction and returns how many were new;
// events already stored are skipped, not errors. One commit for many
// events is what makes a batch faster than as many Appends.
func (db *DB) AppendBatch(evs []apiwire.StoredEvent) (int, error) {
	for _, ev := range evs {
		if err := checkEvent(ev); err != nil {
			return 0, err
		}
	}
	stored := 0
	err := db.tx(func(tx *sql.Tx) error {
		st, err := tx.Prepare(insertEvent + ` ON CONFLICT DO NOTHING`)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer st.Close()
		for _, ev := range evs {
			res, err := st.Exec(ev.TaskID, ev.Sequence, ev.Timestamp, ev.Type, jsonArg(ev.Data))
			if err != nil {
				return eventErr(ev, err)
			}
			n, _ := res.RowsAffected()
			stored += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return stored, nil
}

func checkEvent(ev apiwire.StoredEvent) error {
	if ev.TaskID == "" || ev.Sequence < 0 {
		return fmt.Errorf("store event %q/%d: %w", ev.TaskID, ev.Sequence, ErrInvalid)
	}
	if ev.Data != nil && !json.Valid(ev.Data) {
		return fmt.Errorf("store event %s/%d: %w: data is not JSON", ev.TaskID, ev.Sequence, ErrInvalid)
	}
	return nil
}

func eventErr(ev apiwire.StoredEvent, err error) error {
	switch {
	case err == nil:
		return nil
	case isPrimaryKey(err):
		return fmt.Errorf("store event %s/%d: %w", ev.TaskID, ev.Sequence, ErrDuplicate)
	case isForeignKey(err):
		return fmt.Errorf("store event %s/%d: task: %w", ev.TaskID, ev.Sequence, ErrNotFound)
	}
	return fmt.Errorf("store event %s/%d: %w", ev.TaskID, ev.Sequence, err)
}

// Events returns taskID's events with a sequence above afterSeq, in
// sequence order, at most limit (<= 0: all). Pass -1 to start at the
// first; a listener resuming passes the last sequence it saw.
func (db *DB) Events(taskID string, afterSeq int64, limit int) ([]apiwire.StoredEvent, error) {
	rows, err := db.r.Query(`SELECT task_id, sequence, timestamp, event_type, event_data FROM events
		WHERE task_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`, taskID, afterSeq, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("events of task %q: %w", taskID, err)
	}
	return collect(rows, scanEvent)
}

func scanEvent(r scanner) (apiwire.StoredEvent, error) {
	var ev apiwire.StoredEvent
	var data []byte // a copy: the event outlives the row
	err := r.Scan(&ev.TaskID, &ev.Sequence, &ev.Timestamp, &ev.Type, &data)
	if data != nil {
		ev.Data = data
	}
	return ev, err
}
