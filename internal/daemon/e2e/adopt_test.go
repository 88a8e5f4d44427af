package e2e

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
)

// previousSchema is the store as the version before uids were recorded
// made it (its migrations 1 and 2, the columns the test fills).
const previousSchema = `
CREATE TABLE sessions (id TEXT PRIMARY KEY, unix_user TEXT NOT NULL, agentic_tool TEXT NOT NULL,
	cwd TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', permission_mode TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL DEFAULT '', agent_session_id TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE INDEX sessions_by_created ON sessions (created_at, id);
CREATE INDEX sessions_by_user ON sessions (unix_user, created_at, id);
CREATE TABLE tasks (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	unix_user TEXT NOT NULL, prompt TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN
	('queued', 'running', 'completed', 'failed', 'cancelled', 'timeout', 'interrupted')),
	result TEXT CHECK (result IS NULL OR json_valid(result)), error TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0, ended_at INTEGER NOT NULL DEFAULT 0) STRICT;
CREATE INDEX tasks_by_session ON tasks (session_id, created_at, id);
CREATE INDEX tasks_live ON tasks (status) WHERE status IN ('queued', 'running');
CREATE TABLE events (task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE, sequence INTEGER NOT NULL,
	timestamp INTEGER NOT NULL, event_type TEXT NOT NULL, event_data TEXT,
	PRIMARY KEY (task_id, sequence)) STRICT, WITHOUT ROWID;
CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, action TEXT NOT NULL,
	unix_user TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', task_id TEXT NOT NULL DEFAULT '',
	credential TEXT NOT NULL DEFAULT '', tool TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL DEFAULT '',
	decision TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', count INTEGER NOT NULL DEFAULT 0) STRICT;
CREATE INDEX audit_by_time ON audit (time);
PRAGMA user_version = 2;`

// TestDaemonAdoptsPreviousStore: the daemon started on a store of the
// previous version keeps every row, gives the rows of a name that has an
// account that account's uid (from the real user database), and leaves
// those of a name without one as orphans an admin sees.
func TestDaemonAdoptsPreviousStore(t *testing.T) {
	name, uid := target(t)
	const gone = "agor-no-such-user-x"
	h := startWith(t, nil, func(c *config.Config) {
		if err := os.MkdirAll(c.Daemon.StateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", filepath.Join(c.Daemon.StateDir, "agor.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		stmts := []string{previousSchema}
		for _, u := range []string{name, gone} {
			stmts = append(stmts,
				fmt.Sprintf(`INSERT INTO sessions (id, unix_user, agentic_tool, cwd, created_at, updated_at) VALUES ('s-%[1]s', '%[1]s', 'codex', '.', 1, 1)`, u),
				fmt.Sprintf(`INSERT INTO tasks (id, session_id, unix_user, prompt, status, created_at) VALUES ('t-%[1]s', 's-%[1]s', '%[1]s', 'p', 'completed', 2)`, u))
		}
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := h.d.Store().GetSession("s-" + name)
		if err != nil {
			t.Fatal(err)
		}
		if s.UID == int64(uid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's session uid = %d, want %d", name, s.UID, uid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tk, err := h.d.Store().GetTask("t-" + name); err != nil || tk.UID != int64(uid) {
		t.Fatalf("%s's task: %+v, %v", name, tk, err)
	}
	if tk, err := h.d.Store().GetTask("t-" + gone); err != nil || tk.UID != store.NoUID {
		t.Fatalf("the gone account's task: %+v, %v", tk, err)
	}
	if os.Geteuid() != 0 {
		return // the listing is for admins: root here
	}
	code, out := h.do(t, "GET", "/v1/accounts/orphans", nil)
	if code != 200 {
		t.Fatalf("orphans: %d %v", code, out)
	}
	list, _ := out["orphans"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != gone || list[0].(map[string]any)["uid"] != -1.0 {
		t.Fatalf("orphans = %v, want only %s uid -1", list, gone)
	}
}
