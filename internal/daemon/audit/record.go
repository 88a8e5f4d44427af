// Package audit keeps the trail of what the daemon does on a user's behalf:
// each record goes to the journal as structured fields, to an append-only
// JSON-lines file, and to a bounded in-memory window the client API queries.
package audit

import (
	"log/slog"
	"time"
)

// Action names what happened. The values are stable: operators filter on
// them (`journalctl AGOR_AUDIT_ACTION=api_key_refused`).
type Action string

// Actions recorded by the daemon.
const (
	ExecutorStarted   Action = "executor_started"
	ExecutorStopped   Action = "executor_stopped"
	TaskStarted       Action = "task_started"
	TaskEnded         Action = "task_ended"
	APIKeyIssued      Action = "api_key_issued"
	APIKeyRefused     Action = "api_key_refused"
	PermissionAsked   Action = "permission_requested"
	PermissionDecided Action = "permission_decided"
	EventRefused      Action = "event_refused"
	RateLimited       Action = "rate_limited"
	// AccountMismatch: something stored for a user name belongs to
	// another uid than the name has now (the account was deleted and
	// the name reused): refused. UID is the name's uid now, StoredUID
	// the one recorded with the data.
	AccountMismatch Action = "account_mismatch"
	// AccountPurged: an admin removed what an account that no longer
	// exists left behind.
	AccountPurged Action = "account_purged"
	// FileWritten: a file was written through the API (Path, Bytes).
	FileWritten Action = "file_written"
	// SandboxUnenforced: a task, exec or terminal asked for a sandbox
	// level the kernel did not enforce, and ran unconfined (Sandbox, the
	// level; Reason, the executor's warning).
	SandboxUnenforced Action = "sandbox_unenforced"
	// SandboxUndone: a confined exec or task left in its workspace what
	// would run later outside any sandbox (a git config with a command, a
	// hook, agent settings); the executor disabled each (Reason: what,
	// where, and what it would have run).
	SandboxUndone Action = "sandbox_undone"
	// Egress: one connection (CONNECT) or request (plain HTTP) through
	// the egress service: Host and Port asked for, Address connected to,
	// Decision allowed, denied or failed, Reason the rule that decided,
	// BytesUp and BytesDown what went each way.
	Egress Action = "egress"
	// BudgetReached: the model gateway refused a request, or the API a
	// prompt, because the person's budget is spent (Reason says which).
	BudgetReached Action = "budget_reached"
	// GatewayRefused: the model gateway's door turned a request or a
	// connection away: at the daemon, a credential that is missing,
	// forged, another account's or its task's no more; at a person's
	// executor's relay (its word, for her), a connection from another
	// account or from none of her running tasks' processes. User is the
	// person whose task or relay it was (none when the daemon cannot
	// tell), Reason the rule that refused and the uid that tried, Count
	// how many in a window.
	GatewayRefused Action = "gateway_refused"
)

// Record is one entry of the trail. It names a credential, never its
// value: there is deliberately no field a secret could go in.
type Record struct {
	Time   time.Time `json:"time"`
	Action Action    `json:"action"`
	User   string    `json:"user,omitempty"`
	// UID is the uid of User's account when the record was made; none
	// for daemon-wide records.
	UID UID `json:"uid,omitzero"`
	// StoredUID is, for AccountMismatch, the uid recorded with the data
	// (none: recorded before uids were, its account already gone).
	StoredUID  UID    `json:"stored_uid,omitzero"`
	Session    string `json:"session,omitempty"`
	Task       string `json:"task,omitempty"`
	Credential string `json:"credential,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Mode       string `json:"mode,omitempty"`
	Sandbox    string `json:"sandbox,omitempty"` // a task's sandbox level
	Decision   string `json:"decision,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Path and Bytes name a file written for User (relative to the
	// executor's root) and its size.
	Path  string `json:"path,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	// Host, Port, Address, BytesUp and BytesDown describe an egress
	// connection.
	Host      string `json:"host,omitempty"`
	Port      int    `json:"port,omitempty"`
	Address   string `json:"address,omitempty"`
	BytesUp   int64  `json:"bytes_up,omitempty"`
	BytesDown int64  `json:"bytes_down,omitempty"`
	// Count is how many occurrences one aggregated record stands for
	// (0 or 1 for a single event).
	Count int `json:"count,omitempty"`
}

// attrs are the record's slog attributes. The keys follow the rest of the
// daemon ("user", "task") so the journal handler makes them AGOR_USER,
// AGOR_TASK, and one journalctl filter finds both logs and audit entries.
func (r Record) attrs() []slog.Attr {
	out := []slog.Attr{slog.String("audit_action", string(r.Action))}
	add := func(k, v string) {
		if v != "" {
			out = append(out, slog.String(k, v))
		}
	}
	add("user", r.User)
	add("uid", r.UID.String())
	add("stored_uid", r.StoredUID.String())
	add("session", r.Session)
	add("task", r.Task)
	add("credential", r.Credential)
	add("tool", r.Tool)
	add("mode", r.Mode)
	add("sandbox", r.Sandbox)
	add("decision", r.Decision)
	add("reason", r.Reason)
	add("path", r.Path)
	add("host", r.Host)
	if r.Port > 0 {
		out = append(out, slog.Int("port", r.Port))
	}
	add("address", r.Address)
	if r.Action == Egress {
		out = append(out, slog.Int64("bytes_up", r.BytesUp), slog.Int64("bytes_down", r.BytesDown))
	}
	if r.Bytes > 0 {
		out = append(out, slog.Int64("bytes", r.Bytes))
	}
	if r.Count > 1 {
		out = append(out, slog.Int("count", r.Count))
	}
	return out
}

// level puts refusals and floods at warning level, the rest at info.
func (r Record) level() slog.Level {
	switch r.Action {
	case APIKeyRefused, EventRefused, RateLimited, AccountMismatch, GatewayRefused:
		return slog.LevelWarn
	case Egress:
		if r.Decision != "allowed" {
			return slog.LevelWarn
		}
	}
	return slog.LevelInfo
}

// Filter selects records for Query. Empty fields match everything. The
// client API sets User and UID to the caller unless the caller is an
// admin.
type Filter struct {
	User string
	// UID, when set, drops records that carry another uid: those of an
	// earlier account of the same name. Records that carry none (made by
	// parts that do not record uids) are matched by User alone.
	UID    UID
	Task   string
	Action Action
	Since  time.Time
	Limit  int // newest Limit records; 0 means all kept
}

func (f Filter) match(r Record) bool {
	return (f.User == "" || f.User == r.User) &&
		(f.UID.IsZero() || r.UID.IsZero() || f.UID == r.UID) &&
		(f.Task == "" || f.Task == r.Task) &&
		(f.Action == "" || f.Action == r.Action) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since))
}
