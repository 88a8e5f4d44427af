package store

import (
	"database/sql"
	"fmt"
	"time"
)

// Spend is one model request as the gateway saw it: who, for which task,
// the tokens the provider's answer reported and what they cost.
type Spend struct {
	At         time.Time
	User       string
	UID        int64 // NoUID when not known
	Session    string
	Task       string
	Agent      string
	API        string
	Model      string
	Input      int64 // uncached input tokens
	Output     int64
	CacheRead  int64
	CacheWrite int64
	CostMicros int64 // in millionths of the price table's currency
	Status     int   // the provider's HTTP status
	Streamed   bool
	Error      string // why the answer was cut short, if it was
}

const ledgerCols = `at, unix_user, unix_uid, session_id, task_id, agent, api, model, input_tokens, output_tokens,
	cache_read_tokens, cache_write_tokens, cost_micros, status, streamed, error`

// AddSpend stores one row of the ledger (At now when zero).
func (db *DB) AddSpend(s Spend) error {
	if s.User == "" || s.API == "" {
		return fmt.Errorf("add spend: %w: user and api are required", ErrInvalid)
	}
	if s.At.IsZero() {
		s.At = now()
	}
	var uid any
	if s.UID >= 0 {
		uid = s.UID
	}
	_, err := db.exec(`INSERT INTO ledger (`+ledgerCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		nanos(s.At), s.User, uid, s.Session, s.Task, s.Agent, s.API, s.Model, s.Input, s.Output,
		s.CacheRead, s.CacheWrite, s.CostMicros, s.Status, s.Streamed, s.Error)
	if err != nil {
		return fmt.Errorf("store spend of %s: %w", s.User, err)
	}
	return nil
}

// SpendTotal is the ledger summed for one person and model over a period.
type SpendTotal struct {
	User       string
	Model      string
	Requests   int64
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
	CostMicros int64
}

// Tokens is every token the total counts.
func (t SpendTotal) Tokens() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// SpendFilter narrows SpendTotals: an empty User is everyone; a zero
// Until is now.
type SpendFilter struct {
	User         string
	Since, Until time.Time
}

// SpendTotals sums the ledger per person and model in [Since, Until).
func (db *DB) SpendTotals(f SpendFilter) ([]SpendTotal, error) {
	until := f.Until
	if until.IsZero() {
		until = now().Add(time.Nanosecond)
	}
	rows, err := db.r.Query(`SELECT unix_user, model, count(*), sum(input_tokens), sum(output_tokens),
			sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_micros)
		FROM ledger WHERE (?1 = '' OR unix_user = ?1) AND at >= ?2 AND at < ?3
		GROUP BY unix_user, model ORDER BY unix_user, model`, f.User, nanos(f.Since), nanos(until))
	if err != nil {
		return nil, fmt.Errorf("sum ledger: %w", err)
	}
	return collect(rows, func(s scanner) (SpendTotal, error) {
		var t SpendTotal
		err := s.Scan(&t.User, &t.Model, &t.Requests, &t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.CostMicros)
		return t, err
	})
}

// TaskSpend is the ledger's rows for one task, oldest first.
func (db *DB) TaskSpend(task string) ([]Spend, error) {
	rows, err := db.r.Query(`SELECT `+ledgerCols+` FROM ledger WHERE task_id = ? ORDER BY id`, task)
	if err != nil {
		return nil, fmt.Errorf("ledger of task %s: %w", task, err)
	}
	return collect(rows, scanSpend)
}

func scanSpend(s scanner) (Spend, error) {
	var r Spend
	var at int64
	var uid sql.NullInt64
	err := s.Scan(&at, &r.User, &uid, &r.Session, &r.Task, &r.Agent, &r.API, &r.Model, &r.Input, &r.Output,
		&r.CacheRead, &r.CacheWrite, &r.CostMicros, &r.Status, &r.Streamed, &r.Error)
	r.At = fromNanos(at)
	r.UID = NoUID
	if uid.Valid {
		r.UID = uid.Int64
	}
	return r, err
}
