package config

import (
	"fmt"
	"time"
)

// Quotas bound what one person may make the daemon keep. Connections per
// uid and watch streams are under api: (MaxConnsPerUID, MaxWatchStreams).
// Every count and size has a default an operator of a shared host would
// expect: generous for a person's real use, small enough that one
// person's loop cannot fill the state directory for everyone.
type Quotas struct {
	MaxSessionsPerUser    int   `yaml:"max_sessions_per_user"`      // stored sessions per account (429)
	MaxTasksPerSession    int   `yaml:"max_tasks_per_session"`      // stored tasks per session (429)
	MaxPromptBytes        int64 `yaml:"max_prompt_bytes"`           // one prompt (413)
	MaxCredentialsPerUser int   `yaml:"max_credentials_per_user"`   // stored keys per account (429)
	MaxCredentialBytes    int64 `yaml:"max_credential_bytes"`       // one key's value (413)
	MaxEventStreams       int   `yaml:"max_event_streams_per_user"` // open event streams, replays and follows, per person (429)
	// What a task's events may hold in the store, and a person's events
	// over all their tasks, running ones included (bytes as stored: an
	// agent's raw line counts once however many events it gave). Past
	// either, the task's next event is replaced by an "error" event with
	// code event_quota_exceeded, and EventQuotaAction says what follows.
	MaxEventBytesPerTask int64 `yaml:"max_event_bytes_per_task"`
	MaxEventBytesPerUser int64 `yaml:"max_event_bytes_per_user"`
	// EventQuotaAction is "stop" (the task is stopped, as stop_task
	// would) or "stop_storing" (it runs on; its events are not kept).
	EventQuotaAction string `yaml:"event_quota_action"`
}

// Event quota actions.
const (
	EventQuotaStop        = "stop"
	EventQuotaStopStoring = "stop_storing"
)

// Retention is what the daemon removes on a schedule: ended tasks (with
// their events) older than TaskMaxAge, events older than EventMaxAge,
// sessions with no live task untouched for SessionMaxAge, and the oldest
// ended tasks past StoreMaxBytes; audit.jsonl rotates past AuditMaxBytes
// and rotated files go after AuditMaxAge. Ages in days (0: keep for
// ever), sizes in bytes (0: no bound).
type Retention struct {
	EventMaxAgeDays   int   `yaml:"event_max_age_days"`
	TaskMaxAgeDays    int   `yaml:"task_max_age_days"`
	SessionMaxAgeDays int   `yaml:"session_max_age_days"`
	StoreMaxBytes     int64 `yaml:"store_max_bytes"`
	AuditMaxBytes     int64 `yaml:"audit_max_bytes"`
	AuditMaxAgeDays   int   `yaml:"audit_max_age_days"`
	SweepIntervalS    int64 `yaml:"sweep_interval_s"`
}

// DefaultQuotas: 1000 sessions and 1000 tasks each is years of a
// person's work; 1 MiB is more than any prompt typed or pasted (and the
// API's body limit); 64 keys of 16 KiB cover every provider's key and a
// service-account JSON. A task's transcript of 256 MiB is days of an
// agent's output; 1 GiB a person is a quarter of the default store, so
// four people at their bound still fit in it.
func DefaultQuotas() Quotas {
	return Quotas{MaxSessionsPerUser: 1000, MaxTasksPerSession: 1000, MaxPromptBytes: 1 << 20,
		MaxCredentialsPerUser: 64, MaxCredentialBytes: 16 << 10, MaxEventStreams: 32,
		MaxEventBytesPerTask: 256 << 20, MaxEventBytesPerUser: 1 << 30, EventQuotaAction: EventQuotaStop}
}

// DefaultRetention: 30 days of history, a 4 GiB store, 64 MiB audit
// files kept 90 days (audit records outlive the work they describe: an
// incident is often noticed weeks later), swept hourly.
func DefaultRetention() Retention {
	return Retention{EventMaxAgeDays: 30, TaskMaxAgeDays: 30, SessionMaxAgeDays: 30, StoreMaxBytes: 4 << 30,
		AuditMaxBytes: 64 << 20, AuditMaxAgeDays: 90, SweepIntervalS: 3600}
}

// Store is the headroom the daemon keeps on its state directory's
// filesystem: below MinFreeBytes it refuses new sessions and tasks
// (storage_full) while reads go on, and below half of it it stops storing
// the events of running tasks, so that their ends can still be written.
// 0: no floor (only a full disk stops writes). A floor under 8 MiB may
// not hold: a WAL checkpoint can take 4 MiB at once.
type Store struct {
	MinFreeBytes int64 `yaml:"min_free_bytes"`
}

// DefaultStore: 64 MiB is minutes of the heaviest agent output, and the
// end of every running task many times over.
func DefaultStore() Store { return Store{MinFreeBytes: 64 << 20} }

func (s Store) validate() error {
	if s.MinFreeBytes < 0 {
		return fmt.Errorf("store.min_free_bytes: must be 0 (no floor) or positive, got %d", s.MinFreeBytes)
	}
	return nil
}

// Days turns a retention age into a duration (0: none).
func Days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

func (q Quotas) validate() error {
	for _, ch := range []struct {
		key string
		v   int64
	}{
		{"max_sessions_per_user", int64(q.MaxSessionsPerUser)},
		{"max_tasks_per_session", int64(q.MaxTasksPerSession)},
		{"max_prompt_bytes", q.MaxPromptBytes},
		{"max_credentials_per_user", int64(q.MaxCredentialsPerUser)},
		{"max_credential_bytes", q.MaxCredentialBytes},
		{"max_event_streams_per_user", int64(q.MaxEventStreams)},
		{"max_event_bytes_per_task", q.MaxEventBytesPerTask},
		{"max_event_bytes_per_user", q.MaxEventBytesPerUser},
	} {
		if e := positive(ch.v); e != "" {
			return fmt.Errorf("quotas.%s: %s", ch.key, e)
		}
	}
	if q.EventQuotaAction != EventQuotaStop && q.EventQuotaAction != EventQuotaStopStoring {
		return fmt.Errorf("quotas.event_quota_action: %q is neither %q nor %q", q.EventQuotaAction, EventQuotaStop, EventQuotaStopStoring)
	}
	if q.MaxPromptBytes > 1<<30 {
		return fmt.Errorf("quotas.max_prompt_bytes: at most 1 GiB, got %d", q.MaxPromptBytes)
	}
	return nil
}

func (r Retention) validate() error {
	for _, ch := range []struct {
		key string
		v   int64
	}{
		{"event_max_age_days", int64(r.EventMaxAgeDays)},
		{"task_max_age_days", int64(r.TaskMaxAgeDays)},
		{"session_max_age_days", int64(r.SessionMaxAgeDays)},
		{"store_max_bytes", r.StoreMaxBytes},
		{"audit_max_bytes", r.AuditMaxBytes},
		{"audit_max_age_days", int64(r.AuditMaxAgeDays)},
	} {
		if ch.v < 0 {
			return fmt.Errorf("retention.%s: must be 0 (no bound) or positive, got %d", ch.key, ch.v)
		}
	}
	if e := positive(r.SweepIntervalS); e != "" {
		return fmt.Errorf("retention.sweep_interval_s: %s", e)
	}
	return nil
}
