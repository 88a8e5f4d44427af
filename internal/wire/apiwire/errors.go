package apiwire

import "github.com/agor-sh/agor/internal/wire/protocol"

// The reasons of the API's refusals (ErrorDetail.Reason): the one list a
// client compares against. The protocol's own come first, under the
// names the API uses them by.
const (
	// CodePermissionDenied (403)
	ReasonUnknownCaller  = protocol.ReasonUnknownCaller // no account for the caller's uid
	ReasonNotYourself    = protocol.ReasonNotYourself   // a person acts only for herself
	ReasonAdminOnly      = protocol.ReasonAdminOnly     // root and the admin group only
	ReasonSharedAccount  = "shared_account"             // exec, files and terminals are off in the shared account
	ReasonConfinedCaller = "confined_caller"            // the caller runs inside a sandboxed task
	// The user database did not answer: about the caller (403), about a
	// name (500), or about the person an executor is for (503).
	ReasonUserDatabase = "user_database_unavailable"

	// CodeTokenInvalid (401 on the TCP listener)
	ReasonUnauthenticated = protocol.ReasonUnauthenticated

	// CodeNotFound (404): also what a person asking for another's data
	// gets, so that its existence is not confirmed.
	ReasonNotFound = protocol.ReasonNotFound
)

// The reasons of CodeExecutorUnavailable (503) when the daemon cannot
// start a person's executor (besides the protocol's own).
const (
	ReasonStartFailed    = "start_failed"
	ReasonInvalidUser    = "invalid_user"
	ReasonNoSuchUser     = "no_such_user"
	ReasonUserNotAllowed = "user_not_allowed"
	ReasonNotAuthorized  = "not_authorized" // polkit refused the daemon
	ReasonUnitFailed     = "unit_failed"
	// Environments (also 403 and 400 when the API refuses a request
	// before any executor is asked for).
	ReasonEnvironmentNotAllowed = "environment_not_allowed"
	ReasonNoSuchEnvironment     = "no_such_environment"
)
