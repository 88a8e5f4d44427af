package gateway

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A person's requests beyond MaxInFlight are refused 429 in the
// provider's shape, retry-after 1, before reaching the provider; another
// person's go on, and her next one does once one of hers has ended.
func TestInFlightBound(t *testing.T) {
	held, arrived := make(chan struct{}), make(chan struct{}, 8)
	var alices atomic.Int32
	body := `{"type":"message","usage":{"input_tokens":3,"output_tokens":1}}`
	up := newWitness(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") == realKey && alices.Add(1) <= 2 { // alice's first two: held until let go
			arrived <- struct{}{}
			<-held
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	var let sync.Once
	letGo := func() { let.Do(func() { close(held) }) }
	bob := grantFor(Anthropic, up.URL)
	bob.Person, bob.Key = "bob", "sk-bob-key"
	auth := authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL), "bob-token": bob}}
	g := newRig(t, auth, Options{MaxInFlight: 2})
	t.Cleanup(letGo) // first: closing the servers waits for the held requests
	const req = `{"model":"claude-x","max_tokens":8,"messages":[]}`

	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, b := g.post(t, "/v1/messages", req, xAPIKey(taskToken)); resp.StatusCode != 200 {
				t.Errorf("a held request: %d %s", resp.StatusCode, b)
			}
		}()
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the held requests did not reach the provider")
		}
	}
	resp, b := g.post(t, "/v1/messages", req, xAPIKey(taskToken))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(b), `"rate_limit_error"`) || !strings.Contains(string(b), "alice already has 2 model requests running") {
		t.Fatalf("alice's third request: %d retry-after %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if resp, b := g.post(t, "/v1/messages", req, xAPIKey("bob-token")); resp.StatusCode != 200 {
		t.Fatalf("bob's request while alice has hers: %d %s", resp.StatusCode, b)
	}
	if n := len(up.requests()); n != 3 {
		t.Fatalf("the provider got %d requests, want alice's 2 and bob's 1", n)
	}
	letGo()
	wg.Wait()
	if resp, b := g.post(t, "/v1/messages", req, xAPIKey(taskToken)); resp.StatusCode != 200 {
		t.Fatalf("alice's request once hers ended: %d %s", resp.StatusCode, b)
	}
	for range 4 {
		g.ledger.next(t)
	}
	g.ledger.none(t)
}
