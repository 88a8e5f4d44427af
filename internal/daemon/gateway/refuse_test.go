package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const budgetMsg = "agor: monthly budget of 20.00 USD reached, resets 2026-12-01"

// sdkError is what each provider's SDK reads from an error body: the
// Anthropic SDKs error.type and error.message under "type":"error";
// OpenAI's error.message, .type and .code; Google's error.code, .message
// and .status.
type sdkError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    any    `json:"code"`
		Status  string `json:"status"`
	} `json:"error"`
}

// checkShape: body is api's error shape for status, with msg.
func checkShape(t *testing.T, api API, status int, body []byte, msg string) {
	t.Helper()
	var e sdkError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	if e.Error.Message != msg {
		t.Errorf("error.message = %q, want %q", e.Error.Message, msg)
	}
	switch api {
	case Anthropic:
		if e.Type != "error" || e.Error.Type == "" {
			t.Errorf("not Anthropic's shape: %s", body)
		}
	case OpenAIResponses, OpenAIChat:
		if e.Error.Type == "" || e.Error.Code == nil {
			t.Errorf("not OpenAI's shape: %s", body)
		}
	case Gemini:
		if code, _ := e.Error.Code.(float64); int(code) != status || e.Error.Status == "" {
			t.Errorf("not Gemini's shape for %d: %s", status, body)
		}
	}
}

// TestRefusals: an unknown token, no token, and an Authorizer's
// *Refusal are answered in the provider's own error shape (what its SDK
// parses, so the CLI shows the message), never echo the token, and
// reach no provider.
func TestRefusals(t *testing.T) {
	budget := &Refusal{Status: http.StatusForbidden, Message: budgetMsg}
	slow := &Refusal{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: "agor: slow down"}
	cases := []struct {
		name   string
		token  string
		status int
		msg    string
	}{
		{"unknown", "agor-task-token-unknown", http.StatusUnauthorized, msgUnauthorized},
		{"none", "", http.StatusUnauthorized, msgUnauthorized},
		{"budget", "budget-token", http.StatusForbidden, budgetMsg},
		{"rate", "slow-token", http.StatusTooManyRequests, "agor: slow down"},
	}
	for _, api := range allAPIs {
		up := newWitness(t, "", canned("application/json", "{}"))
		gw := newRig(t, authz{
			grants: map[string]Grant{taskToken: grantFor(api, up.URL)},
			refuse: map[string]*Refusal{"budget-token": budget, "slow-token": slow},
		}, Options{})
		for _, c := range cases {
			t.Run(string(api)+"/"+c.name, func(t *testing.T) {
				resp, body := gw.post(t, pathFor(api), `{"model":"m"}`, tokenFor(api, c.token))
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				if resp.Header.Get("X-Should-Retry") != "false" {
					t.Errorf("a refusal without x-should-retry: false")
				}
				checkShape(t, api, c.status, body, c.msg)
				if c.token != "" && strings.Contains(string(body), c.token) {
					t.Errorf("the answer echoes the token: %s", body)
				}
			})
		}
		if n := len(up.requests()); n != 0 {
			t.Errorf("%s: refused calls reached the provider %d times", api, n)
		}
		gw.ledger.none(t)
	}
}

// TestRefusalTypeByAPI: a Refusal without a Type gets each API's usual
// type for its status, as the SDKs map them to their error classes.
func TestRefusalTypeByAPI(t *testing.T) {
	for _, c := range []struct {
		api    API
		status int
		want   string
	}{
		{Anthropic, 403, "permission_error"}, {Anthropic, 429, "rate_limit_error"}, {Anthropic, 413, "request_too_large"},
		{OpenAIChat, 429, "rate_limit_exceeded"}, {OpenAIResponses, 401, "invalid_api_key"},
		{Gemini, 403, "PERMISSION_DENIED"}, {Gemini, 429, "RESOURCE_EXHAUSTED"}, {Gemini, 401, "UNAUTHENTICATED"},
	} {
		w := httptest.NewRecorder()
		writeError(w, c.api, c.status, "", "m")
		var e sdkError
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		got := e.Error.Type
		if c.api == Gemini {
			got = e.Error.Status
		}
		if got != c.want || w.Code != c.status {
			t.Errorf("%s %d: type %q status %d, want %q", c.api, c.status, got, w.Code, c.want)
		}
	}
}

// TestTooLarge: a body over MaxBody is refused with 413 in the
// provider's shape and never forwarded, whether its length is declared
// or it comes chunked.
func TestTooLarge(t *testing.T) {
	for _, api := range allAPIs {
		t.Run(string(api), func(t *testing.T) {
			t.Parallel()
			up := newWitness(t, "", canned("application/json", "{}"))
			gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(api, up.URL)}}, Options{MaxBody: 1024})
			body := `{"model":"m","pad":"` + strings.Repeat("x", 2048) + `"}`
			resp, got := gw.post(t, pathFor(api), body, tokenFor(api, taskToken))
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			checkShape(t, api, http.StatusRequestEntityTooLarge, got, msgTooLarge)
			resp, got = gw.post(t, pathFor(api), body, func(r *http.Request) {
				tokenFor(api, taskToken)(r)
				r.ContentLength, r.Body = -1, io.NopCloser(strings.NewReader(body)) // chunked
			})
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("chunked: status %d: %s", resp.StatusCode, got)
			}
			checkShape(t, api, http.StatusRequestEntityTooLarge, got, msgTooLarge)
			if n := len(up.requests()); n != 0 {
				t.Errorf("forwarded %d times", n)
			}
		})
	}
}

// TestUnknownPath: only the model calls are served; anything else gets
// a neutral JSON 404 and is not forwarded (nor the token checked).
func TestUnknownPath(t *testing.T) {
	up := newWitness(t, "", canned("application/json", "{}"))
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL)}}, Options{})
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/models"}, {"POST", "/v1/files"}, {"GET", "/v1/messages"}, {"POST", "/v1/messages/batches"},
		{"POST", "/v1beta/models/gemini-2.5-pro:embedContent"}, {"POST", "/v1beta/models/../x:generateContent"},
		{"POST", "/v1beta/models/a%2Fb:generateContent"}, {"POST", "/prefix/v1/messages"},
	} {
		req, _ := http.NewRequest(c.method, gw.URL+c.path, strings.NewReader("{}"))
		xAPIKey(taskToken)(req)
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e sdkError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || e.Error.Message == "" {
			t.Errorf("%s %s: %d %+v, want a 404 with a message", c.method, c.path, resp.StatusCode, e)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d times", n)
	}
}

// TestGrantForAnotherAPI: a grant whose key is for another API is not
// used (the key would go to a provider in the wrong header, or to the
// wrong provider).
func TestGrantForAnotherAPI(t *testing.T) {
	up := newWitness(t, "", canned("application/json", "{}"))
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(OpenAIChat, up.URL)}}, Options{})
	resp, body := gw.post(t, "/v1/messages", `{"model":"m"}`, xAPIKey(taskToken))
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(body), realKey) {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d times", n)
	}
}

// TestUpstreamDown: a provider that cannot be reached is a 502 in the
// provider's shape, and an entry saying so.
func TestUpstreamDown(t *testing.T) {
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(Gemini, &url.URL{Scheme: "http", Host: "127.0.0.1:1"})}}, Options{})
	resp, body := gw.post(t, pathFor(Gemini), geminiBody, googKey(taskToken))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	checkShape(t, Gemini, http.StatusBadGateway, body, msgUnreachable)
	e := gw.ledger.next(t)
	if e.Status != http.StatusBadGateway || !strings.Contains(e.Err, "upstream") || e.Model != "gemini-2.5-pro" {
		t.Errorf("entry %+v", e)
	}
}
