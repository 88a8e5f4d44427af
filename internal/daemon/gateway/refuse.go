package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Refusal is an Authorizer's no with something to say: the client gets
// Status and Message in its provider's own error shape, so the CLI shows
// Message to the person (a budget reached, a task ended).
type Refusal struct {
	// Status is the HTTP status (4xx or 5xx; anything else is sent as
	// 403). Prefer 403 to 429 for a refusal that waiting will not lift:
	// CLIs and SDKs retry 429 many times before showing it.
	Status int
	// Type is the error's type in the API's own words (Anthropic's
	// "permission_error", OpenAI's "insufficient_quota", Gemini's
	// "PERMISSION_DENIED"); empty: the API's usual one for Status.
	Type    string
	Message string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("refused (%d): %s", r.Status, r.Message)
}

// Messages of the gateway's own errors. None names a key or the token.
const (
	msgUnauthorized = "agor gateway: this key is not a valid agor task token (has the task ended?)"
	msgTooLarge     = "agor gateway: request body too large"
	msgUnreachable  = "agor gateway: the model API could not be reached"
	msgMisgranted   = "agor gateway: no model API is set up for this task"
	msgInFlight     = "agor gateway: %s already has %d model requests running (gateway.max_in_flight); retry when one ends"
)

// writeError answers in api's error shape: Anthropic's
// {"type":"error","error":{"type","message"}}, OpenAI's
// {"error":{"message","type","param","code"}}, Gemini's
// {"error":{"code","message","status"}}. The SDKs read error.message
// from these, and a refusal says x-should-retry: false, which the
// Anthropic and OpenAI SDKs obey.
func writeError(w http.ResponseWriter, api API, status int, typ, msg string) {
	writeShaped(w, api, status, typ, msg, false)
}

// writeRetryLater answers 429 in api's error shape with retry-after: 1,
// for a refusal that waiting lifts: the CLIs retry it.
func writeRetryLater(w http.ResponseWriter, api API, msg string) {
	writeShaped(w, api, http.StatusTooManyRequests, "", msg, true)
}

func writeShaped(w http.ResponseWriter, api API, status int, typ, msg string, retry bool) {
	if status < 400 || status > 599 {
		status = http.StatusForbidden
	}
	var body any
	switch api {
	case Anthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": or(typ, anthropicType(status)), "message": msg}}
	case OpenAIResponses, OpenAIChat:
		t := or(typ, openAIType(status))
		body = map[string]any{"error": map[string]any{"message": msg, "type": t, "param": nil, "code": t}}
	case Gemini:
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": or(typ, geminiStatus(status))}}
	default: // no API known yet: a shape every one of the SDKs reads a message from
		body = map[string]any{"error": map[string]any{"message": msg, "type": "not_found", "code": status}}
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	switch {
	case retry:
		h.Set("Retry-After", "1")
	case status < 500:
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func anthropicType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

func openAIType(status int) string {
	switch status {
	case 401:
		return "invalid_api_key"
	case 403:
		return "permission_denied"
	case 404:
		return "not_found"
	case 429:
		return "rate_limit_exceeded"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "server_error"
}

func geminiStatus(status int) string {
	switch status {
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 502, 503, 504:
		return "UNAVAILABLE"
	}
	if status < 500 {
		return "INVALID_ARGUMENT"
	}
	return "INTERNAL"
}
