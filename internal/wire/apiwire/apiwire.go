// Package apiwire is the daemon's HTTP API contract: every body, reply
// and error as a type, and the reasons of its refusals (errors.go); what
// the API writes and what agorctl (or any client) reads. Both import it,
// so the command line links none of the daemon (no SQLite, broker or PTY
// code); a test in cmd/agorctl keeps it that way. testdata holds each
// reply's JSON, which golden_test.go checks.
package apiwire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// ErrorBody is every error's JSON: a stable code, the reason, a message.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the protocol error behind an API error.
type ErrorDetail struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PromptBody is POST /v1/executors/{user}/prompt's and
// POST /v1/sessions/{id}/prompt's body.
type PromptBody struct {
	SessionID      string `json:"session_id"` // "" starts a session
	Tool           string `json:"agentic_tool"`
	Prompt         string `json:"prompt"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	Model          string `json:"model,omitempty"`
	TimeoutMS      int64  `json:"timeout_ms"`
	// Sandbox is the level the agent runs under ("" : the configured
	// default): off, workspace or read-only.
	Sandbox string `json:"sandbox,omitempty"`
	// Environment is where a new session runs ("": the configured
	// default; "host": the host). A follow-up runs where its session
	// started; naming another environment is refused.
	Environment string `json:"environment,omitempty"`
	// Interactive opens the agent's own terminal UI on a terminal of this
	// size instead of running a headless turn: the task's terminal event
	// names the terminal to attach to, and the task ends when the UI
	// exits. Prompt may be empty (the UI's first message otherwise).
	Interactive *protocol.Interactive `json:"interactive,omitempty"`
}

// PromptAccepted is the reply to a prompt that answers at once (202).
type PromptAccepted struct {
	TaskID    string `json:"task_id"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
}

// PrewarmAccepted is the reply to POST /v1/executors/{user}/prewarm
// (202): whether an agent was started ahead of the prompt (Status
// "started" or "refused", Reason why not), and the session it is for:
// the one named, or an id reserved for the person's next new session of
// the same options.
type PrewarmAccepted struct {
	SessionID string `json:"session_id,omitempty"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
}

// StoredEvent is one stored event of a task (the envelope; its data is a
// protocol.Event, the agent's payload): a report_message without its token.
type StoredEvent struct {
	TaskID    string          `json:"task_id"`
	Sequence  int64           `json:"sequence"`
	Timestamp int64           `json:"timestamp"`
	Type      string          `json:"event_type"`
	Data      json.RawMessage `json:"event_data"` // a protocol.Event
}

// Range is a run of sequences [From, To] that never arrived.
type Range struct{ From, To int64 }

// PromptLine is one line of a streamed prompt's NDJSON reply: first the
// ids, then each event as it happens, then the result (execute_prompt's,
// as the executor sent it) or the error.
type PromptLine struct {
	TaskID    string          `json:"task_id,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Event     *StoredEvent    `json:"event,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Missing   []Range         `json:"missing_events,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
	// On the result line, when the daemon recorded the task otherwise
	// than the agent's result says: Status is the task's status as
	// stored ("incomplete"), DroppedEvents the events it could not store
	// and Warning why, naming the state directory.
	Status        string `json:"status,omitempty"`
	DroppedEvents int64  `json:"dropped_events,omitempty"`
	Warning       string `json:"warning,omitempty"`
}

// Health is GET /v1/health's reply.
type Health struct {
	Status  string   `json:"status"` // "ok": the daemon serves
	Version string   `json:"version"`
	Storage *Storage `json:"storage,omitempty"`
}

// Whoami is GET /v1/whoami's reply: the caller as the daemon knows them
// (by SO_PEERCRED, or a bearer token's user).
type Whoami struct {
	User  string `json:"user"`
	UID   uint32 `json:"uid"`
	Admin bool   `json:"admin"` // root or api.admin_group: acts for anyone
}

// Storage is the state of the daemon's store: "full" while writes fail
// for want of space or the free space is below MinFreeBytes (new tasks
// are then refused with storage_full; reads keep working).
type Storage struct {
	State        string     `json:"state"` // ok or full
	StateDir     string     `json:"state_dir"`
	FreeBytes    int64      `json:"free_bytes"` // -1: unknown
	MinFreeBytes int64      `json:"min_free_bytes"`
	Since        *time.Time `json:"since,omitempty"`
	Reason       string     `json:"reason,omitempty"` // what began the last episode
	Episodes     int64      `json:"episodes"`         // since the daemon started
	Pending      int        `json:"pending"`          // statuses kept in memory until written
}

// SessionView is one session as the API shows it.
type SessionView struct {
	ID             string    `json:"id"`
	UnixUser       string    `json:"unix_user"`
	AgenticTool    string    `json:"agentic_tool"`
	Cwd            string    `json:"cwd"`
	Model          string    `json:"model,omitempty"`
	PermissionMode string    `json:"permission_mode"`
	Status         string    `json:"status"`
	Environment    string    `json:"environment,omitempty"` // "": the host
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// SessionList is GET /v1/sessions's reply.
type SessionList struct {
	Sessions []SessionView `json:"sessions"`
}

// TaskView is one task as the API shows it.
type TaskView struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	UnixUser  string          `json:"unix_user"`
	Prompt    string          `json:"prompt"`
	Status    string          `json:"status"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	EndedAt   *time.Time      `json:"ended_at,omitempty"`
	// DroppedEvents is how many of the agent's events the daemon could
	// not store (status "incomplete": its state directory was full).
	DroppedEvents int64 `json:"dropped_events,omitempty"`
}

// TaskList is GET /v1/sessions/{id}/tasks's reply.
type TaskList struct {
	Tasks []TaskView `json:"tasks"`
}

// StopReply is POST /v1/tasks/{id}/stop's reply; Status is set when the
// task had already ended.
type StopReply struct {
	Stopped bool   `json:"stopped"`
	Status  string `json:"status,omitempty"`
}

// ExecBody is POST /v1/executors/{user}/exec's body: exec's params
// without the exec id, which the daemon chooses.
type ExecBody struct {
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env,omitempty"`
	Stdin     []byte            `json:"stdin,omitempty"` // base64
	TimeoutMS int64             `json:"timeout_ms"`
	Sandbox   string            `json:"sandbox,omitempty"` // off, workspace, read-only; "": the default
}

// ExecReply is exec's result with the output the daemon collected (up to
// a bound per stream and per person; OutputDroppedBytes counts what did
// not fit), for a client that did not ask for the stream (ExecLine).
type ExecReply struct {
	protocol.ExecResult
	Stdout             string `json:"stdout"`
	Stderr             string `json:"stderr"`
	OutputDroppedBytes int64  `json:"output_dropped_bytes,omitempty"`
}

// NDJSON is the media type of the API's line streams. A client that
// sends it in Accept to POST /v1/executors/{user}/exec gets ExecLines.
const NDJSON = "application/x-ndjson"

// ExecLine is one line of exec's streamed reply: output chunks in the
// order the command wrote them, then the result, or an error when the
// call failed after output had been sent (before it, the reply is an
// HTTP error as usual). Data is the bytes as written (base64), NULs and
// invalid UTF-8 included.
type ExecLine struct {
	Stream string               `json:"stream,omitempty"` // stdout or stderr
	Data   []byte               `json:"data,omitempty"`
	Result *protocol.ExecResult `json:"result,omitempty"`
	Error  *ErrorDetail         `json:"error,omitempty"`
}

// Frame is one line of a terminal's attach stream, both ways (NDJSON):
// the daemon sends Output and Exit; the client sends Input, Resize,
// Detach or Terminate.
type Frame struct {
	Output    []byte                 `json:"output,omitempty"`
	Exit      *protocol.TerminalExit `json:"exit,omitempty"`
	Input     []byte                 `json:"input,omitempty"`
	Resize    *[2]int                `json:"resize,omitempty"` // cols, rows
	Detach    bool                   `json:"detach,omitempty"`
	Terminate bool                   `json:"terminate,omitempty"`
}

// HashToken is how a bearer token is kept in the tokens file (SHA-256,
// hex): agorctl api-token writes it, the daemon compares against it.
func HashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// Orphan is what an account that no longer exists left behind: the
// sessions (with their tasks and events) and keys stored for a user
// name under a uid the name no longer has. GET /v1/accounts/orphans
// lists them; DELETE /v1/accounts/orphans/{name}?uid=N purges one and
// answers with what it deleted.
type Orphan struct {
	Name string `json:"name"`
	// UID is the uid the data was stored under; -1 when not known (stored
	// before uids were recorded, and no account had the name at the
	// upgrade).
	UID int64 `json:"uid"`
	// CurrentUID is the uid the name has now; absent when no account has
	// the name.
	CurrentUID  *uint32  `json:"current_uid,omitempty"`
	Sessions    int      `json:"sessions"`
	Tasks       int      `json:"tasks"`
	Events      int      `json:"events"`
	Credentials []string `json:"credentials,omitempty"` // the keys' names
}

// OrphanList is GET /v1/accounts/orphans's reply.
type OrphanList struct {
	Orphans []Orphan `json:"orphans"`
}

// FileUpload is one whole file of a POST /v1/executors/{user}/files.
type FileUpload struct {
	Path    string  `json:"path"`
	Content []byte  `json:"content"` // base64
	Mode    *uint32 `json:"mode,omitempty"`
}

// FilesBody writes several whole files, each atomically.
type FilesBody struct {
	Files []FileUpload `json:"files"`
}

// FileWritten is PUT /v1/executors/{user}/files/content's reply.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// SSE event names of GET /v1/executors/{user}/files/watch: "file" carries a
// protocol.FileEvent; "resync" says changes may have been missed (a
// reconnect, or more than the stream could hold): list again.
const (
	WatchEventFile   = "file"
	WatchEventResync = "resync"
)
