package apiwire

import (
	"encoding/json"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// ExecutorStopped is DELETE /v1/executors/{user}'s reply.
type ExecutorStopped struct {
	User    string `json:"user"`
	Stopped bool   `json:"stopped"`
}

// CredentialBody is PUT /v1/credentials/{name}'s body: the caller's own
// key, or the daemon-wide one (admins only). The value is write-only: no
// reply carries it.
type CredentialBody struct {
	Value string `json:"value"`
	Scope string `json:"scope"` // "user" (default) or "daemon"
}

// The scopes of a key (CredentialBody.Scope, DELETE's ?scope=).
const (
	ScopeUser   = "user"
	ScopeDaemon = "daemon"
)

// CredentialSet is PUT /v1/credentials/{name}'s reply.
type CredentialSet struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
}

// CredentialDeleted is DELETE /v1/credentials/{name}'s reply.
type CredentialDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

// PermissionRequest is an agent's open question, waiting for a person's
// answer (GET /v1/permissions).
type PermissionRequest struct {
	ID        string          `json:"id"`
	User      string          `json:"user"`
	Session   string          `json:"session"`
	Task      string          `json:"task"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	AskedAt   time.Time       `json:"asked_at"`
}

// PermissionList is GET /v1/permissions's reply.
type PermissionList struct {
	Permissions []PermissionRequest `json:"permissions"`
}

// PermissionDecision is POST /v1/permissions/{id}'s body: the answer the
// agent gets (request_permission's result).
type PermissionDecision = protocol.RequestPermissionResult

// PermissionDecided is POST /v1/permissions/{id}'s reply.
type PermissionDecided struct {
	ID       string `json:"id"`
	Approved bool   `json:"approved"`
}

// AuditRecord is one record of the audit trail as GET /v1/audit shows it.
// It names a credential, never its value.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	User   string    `json:"user,omitempty"`
	// UID is User's account's uid when the record was made; absent for
	// daemon-wide records. StoredUID is, for account_mismatch, the uid
	// recorded with the data.
	UID        *uint32 `json:"uid,omitempty"`
	StoredUID  *uint32 `json:"stored_uid,omitempty"`
	Session    string  `json:"session,omitempty"`
	Task       string  `json:"task,omitempty"`
	Credential string  `json:"credential,omitempty"`
	Tool       string  `json:"tool,omitempty"`
	Mode       string  `json:"mode,omitempty"`
	Sandbox    string  `json:"sandbox,omitempty"`
	Decision   string  `json:"decision,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Path       string  `json:"path,omitempty"`
	Bytes      int64   `json:"bytes,omitempty"`
	Host       string  `json:"host,omitempty"`
	Port       int     `json:"port,omitempty"`
	Address    string  `json:"address,omitempty"`
	BytesUp    int64   `json:"bytes_up,omitempty"`
	BytesDown  int64   `json:"bytes_down,omitempty"`
	Count      int     `json:"count,omitempty"` // occurrences one aggregated record stands for
}

// AuditList is GET /v1/audit's reply.
type AuditList struct {
	Records []AuditRecord `json:"records"`
}

// AttachError is the one line of a terminal's NDJSON attach stream when
// the executor refused the attach after the upgrade.
type AttachError struct {
	Error string `json:"error"`
}
