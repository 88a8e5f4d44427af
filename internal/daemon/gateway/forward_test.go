package gateway

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// Bodies as the CLIs send them (abridged).
const (
	anthBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`
	responsesBody = `{"model":"gpt-5-codex","stream":true,"input":[{"type":"message","role":"user","content":"hi"}]}`
	chatBody      = `{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	geminiBody    = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
)

// Non-streamed answers, as each provider documents them (the stand-ins
// only stream, but for Gemini's generateContent).
const (
	anthJSON = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"text","text":"Hi! {\"usage\":{\"input_tokens\":999}}"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":2095,"cache_creation_input_tokens":200,"cache_read_input_tokens":1800,"output_tokens":503,"service_tier":"standard"}}`
	responsesJSON = `{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-codex",` +
		`"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],` +
		`"usage":{"input_tokens":3000,"input_tokens_details":{"cached_tokens":2048},"output_tokens":120,` +
		`"output_tokens_details":{"reasoning_tokens":64},"total_tokens":3120},"user":null,"metadata":{}}`
	chatJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1500,"completion_tokens":40,"total_tokens":1540,"prompt_tokens_details":{"cached_tokens":1024}}}`
)

// geminiArray is streamGenerateContent without alt=sse: a JSON array
// written element by element, as the API does (pretty-printed, CRLF).
var geminiArray = []string{
	"[{\r\n  \"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \"Hi\"}]}, \"index\": 0}],\r\n" +
		"  \"usageMetadata\": {\"promptTokenCount\": 900, \"totalTokenCount\": 900}\r\n}\r\n",
	",\r\n{\r\n  \"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \" there\"}]}, \"finishReason\": \"STOP\", \"index\": 0}],\r\n" +
		"  \"usageMetadata\": {\"promptTokenCount\": 900, \"candidatesTokenCount\": 30, \"cachedContentTokenCount\": 512, \"thoughtsTokenCount\": 70}\r\n}\r\n",
	"]",
}

// upstreamCase is one way a CLI calls a provider through the gateway.
type upstreamCase struct {
	name     string
	api      API
	path     string // as the CLI sends it, query included
	body     string
	send     func(*http.Request) // puts the token on as the CLI does
	serve    func(t *testing.T) (http.Handler, func() []string)
	want     Usage
	model    string
	streamed bool
}

func upstreamCases() []upstreamCase {
	cannedUp := func(ct string, pieces ...string) func(*testing.T) (http.Handler, func() []string) {
		return func(*testing.T) (http.Handler, func() []string) { return canned(ct, pieces...), nil }
	}
	anth := func(t *testing.T) (http.Handler, func() []string) {
		a := modeltest.NewAnthropic(t, modeltest.AnthTurn{Text: "hi"})
		return a.Config.Handler, func() []string { return anthKeys(a) }
	}
	gem := func(t *testing.T) (http.Handler, func() []string) {
		g := modeltest.NewGemini(t)
		return g.Handler(), g.Keys
	}
	d := modeltest.AnthDefaultUsage
	anthWant := Usage{Input: d.InputTokens, Output: d.OutputTokens, CacheRead: d.CacheReadTokens, CacheWrite: d.CacheWriteTokens}
	return []upstreamCase{
		{"anthropic/sse", Anthropic, "/v1/messages?beta=true", anthBody, xAPIKey(taskToken), anth, anthWant, "claude-sonnet-4-5", true},
		{"anthropic/sse/bearer", Anthropic, "/v1/messages", anthBody, bearerAuth(taskToken), anth, anthWant, "claude-sonnet-4-5", true},
		{"anthropic/json", Anthropic, "/v1/messages", strings.Replace(anthBody, `"stream":true`, `"stream":false`, 1), xAPIKey(taskToken),
			cannedUp("application/json", anthJSON), Usage{Input: 2095, Output: 503, CacheRead: 1800, CacheWrite: 200}, "claude-sonnet-4-5", false},
		{"responses/sse", OpenAIResponses, "/v1/responses", responsesBody, bearerAuth(taskToken), responsesStandIn,
			Usage{Input: 200, Output: 42, CacheRead: 1000}, "gpt-5-codex", true},
		{"responses/json", OpenAIResponses, "/v1/responses", responsesBody, bearerAuth(taskToken),
			cannedUp("application/json", responsesJSON), Usage{Input: 952, Output: 120, CacheRead: 2048}, "gpt-5-codex", false},
		{"chat/sse", OpenAIChat, "/v1/chat/completions", chatBody, bearerAuth(taskToken), chatStandIn,
			Usage{Input: 9, Output: 5, CacheRead: 4}, "gpt-4.1", true},
		{"chat/json", OpenAIChat, "/v1/chat/completions", chatBody, bearerAuth(taskToken),
			cannedUp("application/json", chatJSON), Usage{Input: 476, Output: 40, CacheRead: 1024}, "gpt-4.1", false},
		{"gemini/sse", Gemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody, googKey(taskToken), gem,
			Usage{Input: 11, Output: 7}, "gemini-2.5-pro", true},
		{"gemini/json/query-key", Gemini, "/v1beta/models/gemini-2.5-flash:generateContent?key=" + taskToken, geminiBody, nil, gem,
			Usage{Input: 11, Output: 7}, "gemini-2.5-flash", false},
		{"gemini/array", Gemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", geminiBody, googKey(taskToken),
			cannedUp("application/json; charset=UTF-8", geminiArray...), Usage{Input: 388, Output: 100, CacheRead: 512}, "gemini-2.5-pro", true},
	}
}

func responsesStandIn(t *testing.T) (http.Handler, func() []string) {
	s := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{
		Text: "hi", Usage: modeltest.OpenAIUsage{InputTokens: 1200, CachedInputTokens: 1000, OutputTokens: 42},
	})
	return s.Handler(), func() []string {
		var keys []string
		for _, r := range s.Requests() {
			keys = append(keys, strings.TrimPrefix(r.Authorization, "Bearer "))
		}
		return keys
	}
}

func chatStandIn(t *testing.T) (http.Handler, func() []string) {
	c := modeltest.NewOpenAIChat(t)
	return c.Handler(), c.Keys
}

func anthKeys(a *modeltest.Anthropic) []string {
	var keys []string
	for _, r := range a.Requests() {
		keys = append(keys, r.APIKey)
	}
	return keys
}

// TestForward: for each API, streamed and not, a call made with the task
// token as the CLI sends it reaches the provider (under its base URL's
// path prefix) with the real key and nowhere the token, the answer
// reaches the client byte for byte, and the entry recorded carries the
// provider's own usage numbers.
func TestForward(t *testing.T) {
	for _, c := range upstreamCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, keys := c.serve(t)
			up := newWitness(t, "/prefix", h)
			gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(c.api, up.URL)}}, Options{})
			resp, got := gw.post(t, c.path, c.body, c.send)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s: %s", resp.Status, got)
			}
			reqs := up.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(reqs))
			}
			checkCredentials(t, c.api, reqs[0])
			if keys != nil {
				if diff := cmp.Diff([]string{realKey}, keys()); diff != "" {
					t.Errorf("keys the stand-in saw (-want +got):\n%s", diff)
				}
			}
			if sent := reqs[0].Out(); !bytes.Equal(got, sent) {
				t.Errorf("client got %d bytes, not the %d the provider sent:\n%s", len(got), len(sent), got)
			}
			e := gw.ledger.next(t)
			want := Entry{Person: "alice", Task: "t-1", Session: "s-1", Agent: "claude", API: c.api,
				Model: c.model, Usage: c.want, Streamed: c.streamed, Status: http.StatusOK}
			if diff := cmp.Diff(want, e, cmpopts.IgnoreFields(Entry{}, "Started", "Ended")); diff != "" {
				t.Errorf("entry (-want +got):\n%s", diff)
			}
			if e.Started.IsZero() || e.Ended.Before(e.Started) {
				t.Errorf("entry times %v .. %v", e.Started, e.Ended)
			}
		})
	}
}

// checkCredentials: the upstream request carried the real key where
// api's provider reads it, and the token nowhere: no header, the query,
// the path.
func checkCredentials(t *testing.T, api API, s seen) {
	t.Helper()
	if !strings.HasPrefix(s.Path, "/prefix/") {
		t.Errorf("upstream path %q lost the base URL's prefix", s.Path)
	}
	where := map[API]string{Anthropic: "X-Api-Key", Gemini: "X-Goog-Api-Key", OpenAIResponses: "Authorization", OpenAIChat: "Authorization"}
	for name, vs := range s.Header {
		for _, v := range vs {
			if strings.Contains(v, taskToken) {
				t.Errorf("upstream got the token in %s", name)
			}
			if strings.Contains(v, realKey) && name != where[api] {
				t.Errorf("upstream got the key in %s, want only in %s", name, where[api])
			}
		}
	}
	want := realKey
	if where[api] == "Authorization" {
		want = "Bearer " + realKey
	}
	if got := s.Header.Get(where[api]); got != want {
		t.Errorf("upstream %s = %q, want %q", where[api], got, want)
	}
	if strings.Contains(s.RawQuery, taskToken) || strings.Contains(s.RawQuery, "key=") || strings.Contains(s.Path, taskToken) {
		t.Errorf("upstream URL %s?%s carries a key", s.Path, s.RawQuery)
	}
}

// TestQueryKeptButKey: the query goes on as sent, every key parameter
// taken out, however spelled; the upstream's own query is kept first.
func TestQueryKeptButKey(t *testing.T) {
	for raw, want := range map[string]string{
		"":                          "",
		"alt=sse":                   "alt=sse",
		"key=T":                     "",
		"alt=sse&key=T":             "alt=sse",
		"key=T&alt=sse&key=U":       "alt=sse",
		"%6Bey=T&beta=true":         "beta=true",
		"a=1;key=T&b=2":             "b=2",
		"keys=1&monkey=2&key":       "keys=1&monkey=2",
		"x=%zz&key=%zz&%zzkey=1&=2": "x=%zz&%zzkey=1&=2",
	} {
		if got := withoutKey(raw); got != want {
			t.Errorf("withoutKey(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := joinQuery("api-version=1", "alt=sse"); got != "api-version=1&alt=sse" {
		t.Errorf("joinQuery = %q", got)
	}
}

// TestTokenStrippedEverywhere: a token sent in every place any client
// puts a key (and hop-by-hop headers) goes no further than the gateway.
func TestTokenStrippedEverywhere(t *testing.T) {
	for _, api := range allAPIs {
		up := newWitness(t, "", canned("application/json", "{}"))
		gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(api, up.URL)}}, Options{})
		resp, body := gw.post(t, pathFor(api)+"?alt=sse&key="+taskToken+"&a=1;key="+taskToken, `{}`, func(r *http.Request) {
			for _, h := range []string{"x-api-key", "x-goog-api-key", "api-key", "Cookie", "Proxy-Authorization"} {
				r.Header.Set(h, taskToken)
			}
			r.Header.Set("Authorization", "Bearer "+taskToken)
			r.Header.Set("Connection", "X-Hop")
			r.Header.Set("X-Hop", taskToken)
		})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", api, resp.StatusCode, body)
		}
		reqs := up.requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", api, len(reqs))
		}
		checkCredentials(t, api, seen{Path: "/prefix/", RawQuery: reqs[0].RawQuery, Header: reqs[0].Header})
		if reqs[0].RawQuery != "alt=sse" {
			t.Errorf("%s: query %q, want alt=sse", api, reqs[0].RawQuery)
		}
		gw.ledger.next(t)
	}
}

// TestGzipUpstream: a provider that compresses is read through: the
// transport asks for gzip and undoes it (the client's own
// Accept-Encoding is not passed on), so usage is read and the client
// gets the plain body.
func TestGzipUpstream(t *testing.T) {
	zipped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("upstream Accept-Encoding %q, want the transport's gzip", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, chatJSON)
		_ = zw.Close()
	})
	up := newWitness(t, "", zipped)
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(OpenAIChat, up.URL)}}, Options{})
	resp, body := gw.post(t, "/v1/chat/completions", chatBody, func(r *http.Request) {
		bearerAuth(taskToken)(r)
		r.Header.Set("Accept-Encoding", "br")
	})
	if string(body) != chatJSON || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("client got %q encoded %q", body, resp.Header.Get("Content-Encoding"))
	}
	if e := gw.ledger.next(t); e.Usage != (Usage{Input: 476, Output: 40, CacheRead: 1024}) || e.Err != "" {
		t.Errorf("entry usage %+v err %q", e.Usage, e.Err)
	}
}
