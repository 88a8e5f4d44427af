package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Store is what the API keeps in the daemon's store.
type Store interface {
	CreateSession(s store.Session) (store.Session, error)
	GetSession(id string) (store.Session, error)
	IdleLatestSession(user string, uid uint32, env string) (store.Session, error)
	ListSessions(user string, limit int, after string) ([]store.Session, error)
	ListSessionsOf(user string, uid uint32, limit int, after string) ([]store.Session, error)
	UpdateSession(s store.Session) (store.Session, error)
	CreateTask(t store.Task) (store.Task, error)
	SetTaskStatus(id string, status store.TaskStatus, result json.RawMessage, errMsg string) error
	FinishTask(id string, f store.Finish) error
	GetTask(id string) (store.Task, error)
	ListTasks(sessionID string, limit int, after string) ([]store.Task, error)
	Events(taskID string, afterSeq int64, limit int) ([]apiwire.StoredEvent, error)
	EventPage(taskID string, afterSeq int64, limit int, maxBytes int64) ([]apiwire.StoredEvent, error)
	// What accounts own: adoption of the previous version's rows, and
	// the orphans' listing and purge.
	Adopt(ctx context.Context, accounts store.Accounts) (store.Adoption, error)
	Owners() ([]store.Owner, error)
	Purge(name string, uid int64) (store.Owner, error)
	OtherUIDs(user string, uid uint32) ([]int64, error)
	// Counts for the quotas (quotas.go).
	CountSessions(user string, uid uint32) (int, error)
	CountTasks(session string) (int, error)
	StoredBytes(user string, uid int64) (int64, error)
	// Where a task the last daemon ran goes on from (resume.go).
	LastSequence(task string) (int64, error)
	// Tasks running now, to tell an idle executor (replace.go).
	RunningBefore(t time.Time) ([]store.Task, error)
	// The filesystem under the store (space.go).
	RoomForWork() error
	Space() store.Space
}

// storeErr maps the store's errors to the API's.
func storeErr(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return rpc.Errorf(protocol.CodeNotFound, protocol.ReasonNotFound, "no such %s", what)
	}
	return err
}
