package store

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

var (
	_ events.Store      = (*DB)(nil)
	_ events.SizedStore = (*DB)(nil)
)

// rawApart is the size from which an event's raw line is kept apart, once
// per task: an agent line with a message and three blocks becomes five
// events, each carrying the whole line. Shorter ones stay in the event.
const rawApart = 256

const insertEvent = `INSERT INTO events (task_id, sequence, timestamp, event_type, event_data, raw_id) VALUES (?, ?, ?, ?, ?, ?)`

// Append stores ev durably (events.Store). The events.Sink drops the
// duplicates it has seen itself; one that reaches the store anyway (the
// executor resending after a daemon restart, when the sink's memory is
// empty) is refused with an error wrapping ErrDuplicate and the stored
// event is kept. An event for a task not in the store is ErrNotFound.
func (db *DB) Append(ev apiwire.StoredEvent) error {
	_, err := db.AppendSized(ev)
	return err
}

// AppendSized is Append, returning the bytes the event added to the
// store: its data, and its raw line when no earlier event of the task
// had the same (events.SizedStore).
func (db *DB) AppendSized(ev apiwire.StoredEvent) (int64, error) {
	if err := checkEvent(ev); err != nil {
		return 0, err
	}
	if err := db.roomForEvents(); err != nil {
		return 0, eventErr(ev, err)
	}
	var n int64
	err := db.tx(func(tx *sql.Tx) error {
		var err error
		n, _, err = insertEventTx(tx, ev, "")
		return err
	})
	return n, eventErr(ev, err)
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
	if err := db.roomForEvents(); err != nil {
		return 0, fmt.Errorf("append %d events: %w", len(evs), err)
	}
	stored := 0
	err := db.tx(func(tx *sql.Tx) error {
		for _, ev := range evs {
			_, ok, err := insertEventTx(tx, ev, ` ON CONFLICT DO NOTHING`)
			if err != nil {
				return eventErr(ev, err)
			}
			if ok {
				stored++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return stored, nil
}

// insertEventTx stores ev (its raw line apart, once per task) and adds
// the bytes it took to its task's event_bytes. It returns those bytes and
// whether the event was new (onConflict may skip a duplicate).
func insertEventTx(tx *sql.Tx, ev apiwire.StoredEvent, onConflict string) (int64, bool, error) {
	data, raw := splitRaw(ev.Data)
	var rawID any
	var n int64
	if raw != nil {
		id, added, err := putRaw(tx, ev.TaskID, raw)
		if err != nil {
			return 0, false, err
		}
		rawID, n = id, added
	}
	res, err := tx.Exec(insertEvent+onConflict, ev.TaskID, ev.Sequence, ev.Timestamp, ev.Type, jsonArg(data), rawID)
	if err != nil {
		return 0, false, err
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return n, false, nil
	}
	n += int64(len(data))
	if _, err := tx.Exec(`UPDATE tasks SET event_bytes = event_bytes + ? WHERE id = ?`, n, ev.TaskID); err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// putRaw keeps raw once for task; it returns its row and the bytes added
// (0 when the task already had it).
func putRaw(tx *sql.Tx, task string, raw []byte) (int64, int64, error) {
	h := sha256.Sum256(raw)
	var id int64
	err := tx.QueryRow(`SELECT id FROM event_raws WHERE task_id = ? AND hash = ?`, task, h[:]).Scan(&id)
	if err == nil {
		return id, 0, nil
	}
	if err != sql.ErrNoRows {
		return 0, 0, err
	}
	res, err := tx.Exec(`INSERT INTO event_raws (task_id, hash, raw) VALUES (?, ?, ?)`, task, h[:], string(raw))
	if err != nil {
		return 0, 0, err
	}
	id, err = res.LastInsertId()
	return id, int64(len(raw)), err
}

// splitRaw takes a long "raw" member out of an event's JSON object. The
// rest is re-encoded (members in name order); anything else is kept as
// it came.
func splitRaw(data json.RawMessage) (json.RawMessage, []byte) {
	if len(data) < rawApart || !bytes.Contains(data, []byte(`"raw"`)) {
		return data, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || len(m["raw"]) < rawApart {
		return data, nil
	}
	raw := m["raw"]
	delete(m, "raw")
	rest, err := json.Marshal(m)
	if err != nil {
		return data, nil
	}
	return rest, raw
}

// joinRaw puts a raw line kept apart back into its event's object, last.
func joinRaw(data, raw []byte) json.RawMessage {
	if raw == nil {
		return data
	}
	out := make([]byte, 0, len(data)+len(raw)+8)
	out = append(out, data[:len(data)-1]...)
	if !bytes.Equal(bytes.TrimSpace(data[:len(data)-1]), []byte("{")) {
		out = append(out, ',')
	}
	out = append(out, `"raw":`...)
	out = append(out, raw...)
	return append(out, '}')
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
	return db.EventPage(taskID, afterSeq, limit, 0)
}

// EventPage is Events that also stops once the events read hold maxBytes
// (> 0; one event at least): a reader of a task's events pages through
// them in bounded memory however large each event is.
func (db *DB) EventPage(taskID string, afterSeq int64, limit int, maxBytes int64) ([]apiwire.StoredEvent, error) {
	rows, err := db.r.Query(`SELECT e.task_id, e.sequence, e.timestamp, e.event_type, e.event_data, r.raw
		FROM events e LEFT JOIN event_raws r ON r.id = e.raw_id
		WHERE e.task_id = ? AND e.sequence > ? ORDER BY e.sequence LIMIT ?`, taskID, afterSeq, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("events of task %q: %w", taskID, err)
	}
	defer rows.Close()
	var out []apiwire.StoredEvent
	var held int64
	for (maxBytes <= 0 || held < maxBytes) && rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("events of task %q: %w", taskID, err)
		}
		out = append(out, ev)
		held += int64(len(ev.Data))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of task %q: %w", taskID, err)
	}
	return out, nil
}

func scanEvent(r scanner) (apiwire.StoredEvent, error) {
	var ev apiwire.StoredEvent
	var data, raw []byte // copies: the event outlives the row
	err := r.Scan(&ev.TaskID, &ev.Sequence, &ev.Timestamp, &ev.Type, &data, &raw)
	if data != nil {
		ev.Data = joinRaw(data, raw)
	}
	return ev, err
}

// StoredBytes is what user's account uid holds in the store: its tasks'
// prompts and events (the per-person bound that admits a new prompt).
func (db *DB) StoredBytes(user string, uid int64) (int64, error) {
	var n int64
	err := db.r.QueryRow(`SELECT coalesce(sum(event_bytes + length(CAST(prompt AS BLOB))), 0) FROM tasks WHERE unix_user = ? AND unix_uid = ?`, user, uid).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("stored bytes of %s: %w", user, err)
	}
	return n, nil
}

// EventBytes is what the events of user's account uid hold, over all its
// tasks, running ones included (the per-person event quota).
func (db *DB) EventBytes(user string, uid int64) (int64, error) {
	var n int64
	err := db.r.QueryRow(`SELECT coalesce(sum(event_bytes), 0) FROM tasks WHERE unix_user = ? AND unix_uid = ?`, user, uid).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("event bytes of %s: %w", user, err)
	}
	return n, nil
}
