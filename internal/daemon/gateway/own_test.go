package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// ownAuthz also grants requests made with the person's own sign-in.
type ownAuthz struct{ authz }

func (a ownAuthz) AuthorizeOwn(ctx context.Context, api API, _, token string) (Grant, error) {
	g, err := a.Authorize(ctx, api, token)
	g.Key, g.Own = "", err == nil
	return g, err
}

const oauthToken = "sk-ant-oat01-her-own-subscription"

// A request signed in with the person's own subscription: the token in
// the path names the task, her bearer token reaches the provider as she
// sent it, no key is put on, and the entry says so. The token goes
// nowhere upstream.
func TestOwnSignInPassesThrough(t *testing.T) {
	up := newWitness(t, "/prefix", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"message","usage":{"input_tokens":7,"output_tokens":3}}`))
	}))
	gw := newRig(t, ownAuthz{authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL)}}}, Options{})
	resp, body := gw.post(t, OwnPrefix+taskToken+"/v1/messages?beta=true", `{"model":"claude-x","messages":[]}`, bearerAuth(oauthToken))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, body)
	}
	reqs := up.requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(reqs))
	}
	s := reqs[0]
	if s.Path != "/prefix/v1/messages" || s.Header.Get("Authorization") != "Bearer "+oauthToken || s.Header.Get("X-Api-Key") != "" {
		t.Errorf("upstream got %s with Authorization %q, x-api-key %q", s.Path, s.Header.Get("Authorization"), s.Header.Get("X-Api-Key"))
	}
	for k, v := range s.Header {
		if strings.Contains(strings.Join(v, " "), taskToken) || strings.Contains(strings.Join(v, " "), realKey) {
			t.Errorf("header %s carries the token or the daemon's key: %q", k, v)
		}
	}
	if strings.Contains(s.Path+s.RawQuery, taskToken) {
		t.Errorf("the token went upstream in %s?%s", s.Path, s.RawQuery)
	}
	if e := gw.ledger.next(t); !e.Own || e.Task != "t-1" || e.Usage.Input != 7 || e.Usage.Output != 3 {
		t.Errorf("entry %+v, want the task's, own, 7 in 3 out", e)
	}
}

// The own path is refused with a bad token, without one, and by an
// Authorizer that does not take own sign-ins; nothing goes upstream.
func TestOwnSignInRefused(t *testing.T) {
	up := newWitness(t, "", http.NotFoundHandler())
	grants := authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL)}}
	for name, c := range map[string]struct {
		auth Authorizer
		path string
	}{
		"forged":     {ownAuthz{grants}, OwnPrefix + "agor-forged/v1/messages"},
		"no token":   {ownAuthz{grants}, OwnPrefix + "/v1/messages"},
		"not taken":  {grants, OwnPrefix + taskToken + "/v1/messages"},
		"other path": {ownAuthz{grants}, OwnPrefix + taskToken + "/v1/models"},
	} {
		gw := newRig(t, c.auth, Options{})
		resp, body := gw.post(t, c.path, `{"model":"m"}`, bearerAuth(oauthToken))
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %s: %s", name, resp.Status, body)
		}
		gw.ledger.none(t)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("upstream saw %d requests", n)
	}
}

// Codex's ChatGPT sign-in goes to the chatgpt upstream, at its path, and
// only as the person's own sign-in: with a task token in its place it is
// not served.
func TestChatGPTOwnOnly(t *testing.T) {
	up := newWitness(t, "/backend", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"response","usage":{"input_tokens":5,"output_tokens":2}}`))
	}))
	grants := authz{grants: map[string]Grant{taskToken: grantFor(OpenAIResponses, up.URL)}}
	gw := newRig(t, ownAuthz{grants}, Options{})
	if resp, body := gw.post(t, "/chatgpt/responses", `{"model":"m"}`, bearerAuth(taskToken)); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("with a task token: %s %s", resp.Status, body)
	}
	resp, body := gw.post(t, OwnPrefix+taskToken+"/chatgpt/responses", `{"model":"m"}`, bearerAuth(oauthToken))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("own: %s %s", resp.Status, body)
	}
	reqs := up.requests()
	if len(reqs) != 1 || reqs[0].Path != "/backend/responses" || reqs[0].Header.Get("Authorization") != "Bearer "+oauthToken {
		t.Fatalf("upstream saw %+v", reqs)
	}
	if e := gw.ledger.next(t); !e.Own || e.Usage.Input != 5 {
		t.Errorf("entry %+v", e)
	}
}
