package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The key the provider takes and the token the agent holds instead.
const (
	realKey   = "sk-real-provider-key-5f1d2c"
	taskToken = "agor-task-token-9e8d7c6b5a"
)

// authz is an Authorizer over fixed tables.
type authz struct {
	grants map[string]Grant    // token → grant
	refuse map[string]*Refusal // token → refusal
}

func (a authz) Authorize(_ context.Context, api API, token string) (Grant, error) {
	if r, ok := a.refuse[token]; ok {
		return Grant{}, r
	}
	if g, ok := a.grants[token]; ok {
		return g, nil
	}
	return Grant{}, errors.New("token unknown")
}

// grantFor is the task's grant to call api at upstream.
func grantFor(api API, upstream *url.URL) Grant {
	return Grant{Person: "alice", Task: "t-1", Session: "s-1", Agent: "claude", API: api, Key: realKey, Upstream: upstream}
}

// ledger is a Recorder the test waits on.
type ledger chan Entry

func (l ledger) Record(e Entry) { l <- e }

func (l ledger) next(t testing.TB) Entry {
	t.Helper()
	select {
	case e := <-l:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no entry recorded")
		return Entry{}
	}
}

func (l ledger) none(t testing.TB) {
	t.Helper()
	select {
	case e := <-l:
		t.Fatalf("recorded %+v, want nothing", e)
	case <-time.After(50 * time.Millisecond):
	}
}

// seen is one request a witnessed upstream got, and what it answered.
type seen struct {
	Path, RawQuery string
	Header         http.Header
	mu             *sync.Mutex
	out            *bytes.Buffer
}

func (s seen) Out() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.out.Bytes())
}

// witness serves h under prefix (as a provider behind a path-prefixed
// base URL) and keeps every request's headers and query and every byte
// h wrote back.
type witness struct {
	URL *url.URL // the base URL, prefix included
	mu  sync.Mutex
	got []seen
}

func newWitness(t testing.TB, prefix string, h http.Handler) *witness {
	wt := &witness{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), mu: &wt.mu, out: &bytes.Buffer{}}
		wt.mu.Lock()
		wt.got = append(wt.got, s)
		wt.mu.Unlock()
		http.StripPrefix(prefix, h).ServeHTTP(&teeWriter{ResponseWriter: w, s: s}, r)
	}))
	t.Cleanup(srv.Close)
	wt.URL, _ = url.Parse(srv.URL + prefix)
	return wt
}

func (wt *witness) requests() []seen {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]seen(nil), wt.got...)
}

type teeWriter struct {
	http.ResponseWriter
	s seen
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.s.mu.Lock()
	t.s.out.Write(p)
	t.s.mu.Unlock()
	return t.ResponseWriter.Write(p)
}

func (t *teeWriter) Flush() { http.NewResponseController(t.ResponseWriter).Flush() }

// rig is a gateway on loopback with a client for it.
type rig struct {
	URL    string
	ledger ledger
	client *http.Client
}

func newRig(t testing.TB, auth Authorizer, opts Options) *rig {
	up := &http.Transport{}
	opts.Transport = up
	l := make(ledger, 16)
	srv := httptest.NewServer(New(auth, l, opts))
	down := &http.Transport{DisableCompression: true}
	t.Cleanup(func() {
		srv.Close()
		up.CloseIdleConnections()
		down.CloseIdleConnections()
	})
	return &rig{URL: srv.URL, ledger: l, client: &http.Client{Transport: down}}
}

// post sends body to path as a CLI would, set putting the token on.
func (g *rig) post(t testing.TB, path, body string, set func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if set != nil {
		set(req)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// How each CLI sends its key.
func xAPIKey(tok string) func(*http.Request) {
	return func(r *http.Request) {
		r.Header.Set("x-api-key", tok)
		r.Header.Set("anthropic-version", "2023-06-01")
	}
}

func bearerAuth(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func googKey(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("x-goog-api-key", tok) }
}

// tokenFor sends tok where api's CLI puts its key.
func tokenFor(api API, tok string) func(*http.Request) {
	switch api {
	case Anthropic:
		return xAPIKey(tok)
	case Gemini:
		return googKey(tok)
	}
	return bearerAuth(tok)
}

// canned answers every request with body, in pieces split at "\n\n" or
// array elements, flushed one by one as a provider streams.
func canned(contentType string, pieces ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		for _, p := range pieces {
			_, _ = io.WriteString(w, p)
			http.NewResponseController(w).Flush()
		}
	})
}

// pathFor is a request path of api (Gemini's for model, streaming or not).
func pathFor(api API) string {
	switch api {
	case Anthropic:
		return "/v1/messages"
	case OpenAIResponses:
		return "/v1/responses"
	case OpenAIChat:
		return "/v1/chat/completions"
	}
	return "/v1beta/models/gemini-2.5-pro:generateContent"
}

var allAPIs = []API{Anthropic, OpenAIResponses, OpenAIChat, Gemini}
