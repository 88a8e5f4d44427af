package api

import ()

// Reasons of the quota refusals: 429 for a count, 413 for a size. Each
// message names the configuration key and its value.
const (
	ReasonTooManySessions     = "too_many_sessions"
	ReasonTooManyTasks        = "too_many_tasks"
	ReasonTooManyCredentials  = "too_many_credentials"
	ReasonTooManyEventStreams = "too_many_event_streams"
	ReasonPromptTooLarge      = "prompt_too_large"
	ReasonStoredBytes         = "stored_bytes_quota_exceeded"
	ReasonCredentialTooLarge  = "credential_too_large"
)

// tooLarge are the reasons answered 413 rather than 429.
var tooLarge = map[string]bool{ReasonPromptTooLarge: true, ReasonCredentialTooLarge: true}
