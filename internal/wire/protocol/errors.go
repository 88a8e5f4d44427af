package protocol

import "github.com/agor-sh/agor/internal/wire/rpc"

// Application error codes, in the -32000..-32099 range JSON-RPC 2.0
// reserves for servers. Each error carries data.reason, one of the
// Reason constants below.
const (
	CodeTokenInvalid        = -32001 // session token unknown, expired, used up or revoked
	CodePermissionDenied    = -32002 // the caller may not do this
	CodeLimitReached        = rpc.CodeLimitReached
	CodeTaskNotFound        = -32004
	CodeExecutorUnavailable = -32005 // unit failed, user not allowed, executor crashed
	CodeNotFound            = -32006 // a file, terminal, watch or record that does not exist
	CodeStorageFull         = -32007 // the daemon's store cannot write: its state directory is full
)

// Reasons: data.reason of an application error, machine-readable.
const (
	// CodeTokenInvalid
	ReasonUnauthenticated = "unauthenticated"

	// CodePermissionDenied
	ReasonPathEscape    = "path_escape"   // a path leads outside the executor's root
	ReasonOSPermission  = "os_permission" // the kernel said EACCES/EPERM
	ReasonUnknownCaller = "unknown_caller"
	ReasonNotYourself   = "not_yourself"
	ReasonAdminOnly     = "admin_only"
	ReasonBudgetReached = "budget_reached" // the person's model budget is spent (gateway.budgets)
	ReasonWithheld      = "withheld"       // a key the model gateway keeps to itself

	// CodeLimitReached (rpc's own: too_many_requests, message_too_large)
	ReasonTooManyRequests    = "too_many_requests"
	ReasonTooManyExecutors   = "too_many_executors"
	ReasonTooManyTerminals   = "too_many_terminals"
	ReasonTooManyWatches     = "too_many_watches"
	ReasonTooManyDirectories = "too_many_directories"
	ReasonTooManyUploads     = "too_many_uploads"
	ReasonTooManyPending     = "too_many_pending"
	ReasonChunkTooLarge      = "chunk_too_large"
	ReasonInotify            = "inotify"

	// CodeTaskNotFound
	ReasonTaskNotFound = "task_not_found"

	// CodeExecutorUnavailable
	ReasonNoRoot          = "no_root"
	ReasonShuttingDown    = "shutting_down"
	ReasonPingFailed      = "ping_failed"
	ReasonExecutorCrashed = "executor_crashed"
	ReasonConnectFailed   = "connect_failed"
	ReasonSubmitFailed    = "submit_failed" // sbatch or scancel refused (its words in the message)
	ReasonJobEnded        = "job_ended"     // the executor's Slurm job ended before it dialled back
	// the kernel has no Landlock and the configuration requires it
	ReasonSandboxUnavailable = "sandbox_unavailable"

	// CodeNotFound
	ReasonNotFound           = "not_found"
	ReasonCredentialNotFound = "credential_not_found"

	// CodeStorageFull
	ReasonStorageFull = "storage_full"
)
