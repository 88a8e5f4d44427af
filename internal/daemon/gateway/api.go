package gateway

import (
	"net/http"
	"net/url"
	"strings"
)

// API is the shape of a provider's HTTP API, as a CLI speaks it.
type API string

// The APIs the gateway serves, each at the paths its CLIs call (relative
// to the base URL the CLI is given).
const (
	// Anthropic Messages: POST /v1/messages (Claude Code adds
	// ?beta=true), SSE when the body says "stream": true; and POST
	// /v1/messages/count_tokens.
	Anthropic API = "anthropic-messages"
	// OpenAI Responses: POST /v1/responses (Codex), SSE or JSON.
	OpenAIResponses API = "openai-responses"
	// OpenAI Chat Completions: POST /v1/chat/completions (OpenCode and
	// other OpenAI-compatible clients), SSE or JSON; a stream carries
	// usage only with stream_options.include_usage.
	OpenAIChat API = "openai-chat"
	// Gemini: POST /v1beta/models/MODEL:generateContent,
	// :streamGenerateContent (SSE with ?alt=sse, else a streamed JSON
	// array) and :countTokens (Gemini CLI).
	Gemini API = "gemini"
)

// route is what a request's method and path say.
type route struct {
	api    API
	model  string // from the path (Gemini); "" when the body names it
	stream bool   // the path itself asks for a stream (Gemini)
	// upstream names the gateway.upstreams entry when it is not the
	// API's own family, and path is the path sent there: Codex signed in
	// with ChatGPT calls its backend (OwnOnly).
	upstream, path string
}

// ChatGPTUpstream is the upstream of Codex signed in with a ChatGPT
// account: its Responses API under another base URL, for that sign-in's
// own tokens only (never a key of the daemon's).
const ChatGPTUpstream = "chatgpt"

// routeOf maps a request to its API. Only the paths above are served: a
// token is for model calls, not for whatever else a provider offers.
func routeOf(method, path string) (route, bool) {
	if method != http.MethodPost {
		return route{}, false
	}
	switch path {
	case "/v1/messages", "/v1/messages/count_tokens":
		return route{api: Anthropic}, true
	case "/v1/responses":
		return route{api: OpenAIResponses}, true
	case "/v1/chat/completions":
		return route{api: OpenAIChat}, true
	case "/" + ChatGPTUpstream + "/responses":
		return route{api: OpenAIResponses, upstream: ChatGPTUpstream, path: "/responses"}, true
	}
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		return route{}, false
	}
	model, method, _ := strings.Cut(rest, ":")
	if !modelName(model) {
		return route{}, false
	}
	switch method {
	case "generateContent", "countTokens":
		return route{api: Gemini, model: model}, true
	case "streamGenerateContent":
		return route{api: Gemini, model: model, stream: true}, true
	}
	return route{}, false
}

// modelName: a Gemini model id (gemini-2.5-pro, gemini-2.0-flash-001).
// Only characters a path needs no escaping for, so the path forwarded
// is the path checked.
func modelName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// presented is the token the client sent, from where api's clients put
// their key: Claude Code sends x-api-key (ANTHROPIC_API_KEY) or a bearer
// token (ANTHROPIC_AUTH_TOKEN); OpenAI clients a bearer token; Gemini
// clients x-goog-api-key or the key query parameter.
func presented(api API, r *http.Request) string {
	switch api {
	case Anthropic:
		if k := r.Header.Get("X-Api-Key"); k != "" {
			return k
		}
	case Gemini:
		if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		return r.URL.Query().Get("key")
	}
	return bearer(r.Header.Get("Authorization"))
}

func bearer(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// dropped are request headers never forwarded: every place a client puts
// a key (whatever the API, so a token sent in the wrong one goes nowhere
// either), hop-by-hop headers, and Accept-Encoding, so that the
// transport negotiates the encoding and hands over plain bytes to read
// usage from.
var dropped = []string{
	"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie",
	"Accept-Encoding", "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host",
	"X-Forwarded-Proto", "Content-Length", "Host",
}

func forwardHeader(in http.Header) http.Header {
	h := in.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, v := range in.Values("Connection") { // headers it names are hop-by-hop too
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range dropped {
		h.Del(name)
	}
	return h
}

// withoutKey drops every key parameter from a raw query, keeping the
// rest as sent (in order, encoded as it was).
func withoutKey(raw string) string {
	if raw == "" {
		return ""
	}
	var kept []string
	for _, p := range strings.Split(raw, "&") {
		if !namesKey(p) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// namesKey: the parameter is key, also when hidden behind a semicolon
// (which Go's query parser skips but another server may split on).
func namesKey(p string) bool {
	for _, sub := range strings.Split(p, ";") {
		name, _, _ := strings.Cut(sub, "=")
		if n, err := url.QueryUnescape(name); name == "key" || err == nil && n == "key" {
			return true
		}
	}
	return false
}

func joinQuery(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "&" + b
}

// hopByHop are response headers not passed back to the client.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade",
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, v := range src.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			dst.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		dst.Del(name)
	}
}

// OwnPrefix starts the path of a request signed in with its person's own
// subscription (Claude Code's login): OwnPrefix + TOKEN + the API's path.
// The token rides in the path because the request's credential headers
// are the person's own, passed through untouched.
const OwnPrefix = "/own/"

// cutOwn takes the token out of an OwnPrefix path, leaving the API's path
// in u; ok is false (u unchanged) for any other path.
func cutOwn(u *url.URL) (token string, ok bool) {
	rest, ok := strings.CutPrefix(u.Path, OwnPrefix)
	if !ok {
		return "", false
	}
	token, path, found := strings.Cut(rest, "/")
	if !found {
		return "", false
	}
	u.Path, u.RawPath = "/"+path, ""
	return token, true
}
