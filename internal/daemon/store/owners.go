package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agor-sh/agor/internal/identity"
)

// NoUID is the uid of rows whose account is not known: written before
// uids were recorded and either not adopted yet or adopted when no
// account had the name. It matches no account, so only admins see them.
const NoUID = identity.NoUID

// Accounts names the account a user name has now.
type Accounts = identity.Names

// Adoption is what Adopt did, by user name.
type Adoption = identity.Adoption

// Adopt gives the rows written before uids were recorded (the previous
// version's) the uid their user name has now (identity.Adopt); rows of a
// name the user database cannot answer for stay unadopted (invisible but
// to admins) until a later call.
func (db *DB) Adopt(ctx context.Context, accounts Accounts) (Adoption, error) {
	names, err := db.unadopted()
	if err != nil {
		return Adoption{}, err
	}
	return identity.Adopt(ctx, accounts, names, db.setUID)
}

func (db *DB) unadopted() ([]string, error) {
	rows, err := db.r.Query(`SELECT unix_user FROM sessions WHERE unix_uid IS NULL
		UNION SELECT unix_user FROM tasks WHERE unix_uid IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("rows to adopt: %w", err)
	}
	return collect(rows, func(s scanner) (string, error) {
		var name string
		return name, s.Scan(&name)
	})
}

func (db *DB) setUID(name string, uid int64) error {
	return db.tx(func(tx *sql.Tx) error {
		for _, table := range []string{"sessions", "tasks"} {
			if _, err := tx.Exec(`UPDATE `+table+` SET unix_uid = ? WHERE unix_user = ? AND unix_uid IS NULL`, uid, name); err != nil {
				return fmt.Errorf("adopt %s of %q: %w", table, name, err)
			}
		}
		return nil
	})
}

// Owner is one account's share of the store: a user name with the uid
// its rows were recorded with.
type Owner struct {
	Name     string
	UID      int64 // NoUID: not known
	Sessions int
	Tasks    int
	Events   int
}

// Owners lists every (name, uid) that owns rows, by name then uid.
func (db *DB) Owners() ([]Owner, error) {
	rows, err := db.r.Query(`SELECT unix_user, uid, sum(s), sum(t), sum(e) FROM (
			SELECT unix_user, coalesce(unix_uid, -1) AS uid, 1 AS s, 0 AS t, 0 AS e FROM sessions
			UNION ALL
			SELECT unix_user, coalesce(unix_uid, -1), 0, 1,
				(SELECT count(*) FROM events WHERE task_id = tasks.id) FROM tasks
		) GROUP BY unix_user, uid ORDER BY unix_user, uid`)
	if err != nil {
		return nil, fmt.Errorf("owners: %w", err)
	}
	return collect(rows, func(s scanner) (Owner, error) {
		var o Owner
		return o, s.Scan(&o.Name, &o.UID, &o.Sessions, &o.Tasks, &o.Events)
	})
}

// Purge deletes what name owns under uid (NoUID: the rows of unknown
// uid): its sessions, their tasks and those tasks' events. It returns
// what was deleted.
func (db *DB) Purge(name string, uid int64) (Owner, error) {
	o := Owner{Name: name, UID: uid}
	err := db.tx(func(tx *sql.Tx) error {
		const mine = `unix_user = ?1 AND coalesce(unix_uid, -1) = ?2`
		const tasksOf = `(` + mine + ` OR session_id IN (SELECT id FROM sessions WHERE ` + mine + `))`
		err := tx.QueryRow(`SELECT (SELECT count(*) FROM sessions WHERE `+mine+`),
			(SELECT count(*) FROM tasks WHERE `+tasksOf+`),
			(SELECT count(*) FROM events WHERE task_id IN (SELECT id FROM tasks WHERE `+tasksOf+`))`,
			name, uid).Scan(&o.Sessions, &o.Tasks, &o.Events)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM tasks WHERE `+tasksOf, name, uid); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM sessions WHERE `+mine, name, uid)
		return err
	})
	if err != nil {
		return Owner{}, fmt.Errorf("purge %q uid %d: %w", name, uid, err)
	}
	return o, nil
}

// OtherUIDs lists the uids, other than uid, that user's sessions were
// stored under (NoUID among them): earlier accounts of the name, whose
// sessions ListSessionsOf leaves out. Rows not adopted yet are not
// counted: they may be uid's own.
func (db *DB) OtherUIDs(user string, uid uint32) ([]int64, error) {
	rows, err := db.r.Query(`SELECT DISTINCT unix_uid FROM sessions
		WHERE unix_user = ? AND unix_uid IS NOT NULL AND unix_uid != ? ORDER BY unix_uid`, user, uid)
	if err != nil {
		return nil, fmt.Errorf("other uids of %q: %w", user, err)
	}
	return collect(rows, func(s scanner) (int64, error) {
		var n int64
		return n, s.Scan(&n)
	})
}
