package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Anthropic events a held stream sends: its start (input and cache
// counts), then after the hold its end.
const (
	heldStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":" +
		"{\"input_tokens\":50,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n"
	heldEnd = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}," +
		"\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// heldStream is an Anthropic upstream that sends heldStart, then waits
// for release (or its client to leave) before sending heldEnd.
func heldStream(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, heldStart)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, heldEnd)
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
}

// readEvent reads one server-sent event (up to its blank line).
func readEvent(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\n" {
			return b.String(), err
		}
	}
}

// TestStreamEventByEvent: the first event reaches the client while the
// provider has not yet sent its last, and the entry counts the whole
// stream once it ends.
func TestStreamEventByEvent(t *testing.T) {
	release := make(chan struct{})
	up := newWitness(t, "", heldStream(release))
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL)}}, Options{})
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(anthBody))
	xAPIKey(taskToken)(req)
	type arrival struct {
		body  *bufio.Reader
		first string
		err   error
	}
	arrived := make(chan arrival, 1)
	go func() { // the headers, then the first event
		resp, err := gw.client.Do(req)
		if err != nil {
			arrived <- arrival{err: err}
			return
		}
		t.Cleanup(func() { resp.Body.Close() })
		br := bufio.NewReader(resp.Body)
		ev, err := readEvent(br)
		arrived <- arrival{br, ev, err}
	}()
	var a arrival
	select {
	case a = <-arrived:
		if a.err != nil || a.first != heldStart {
			t.Fatalf("first event %q, %v; want %q", a.first, a.err, heldStart)
		}
	case <-time.After(5 * time.Second):
		close(release)
		<-arrived
		t.Fatal("the first event did not arrive before the provider sent its last")
	}
	close(release)
	rest, err := io.ReadAll(a.body)
	if err != nil || string(rest) != heldEnd {
		t.Fatalf("rest %q, %v", rest, err)
	}
	e := gw.ledger.next(t)
	if want := (Usage{Input: 50, Output: 9, CacheRead: 7}); e.Usage != want || e.Err != "" || !e.Streamed {
		t.Errorf("entry usage %+v err %q streamed %v, want %+v", e.Usage, e.Err, e.Streamed, want)
	}
}

// TestClientGoneMidStream: a client leaving mid-stream is recorded with
// what was seen and an error saying so; the provider's request is
// cancelled.
func TestClientGoneMidStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := newWitness(t, "", heldStream(release))
	gw, resp, cancel := leavingClient(t, up.URL)
	if ev, err := readEvent(bufio.NewReader(resp.Body)); err != nil || ev != heldStart {
		t.Fatalf("first event %q, %v", ev, err)
	}
	cancel()
	resp.Body.Close()
	e := gw.ledger.next(t)
	if !strings.Contains(e.Err, "client went away") || e.Status != http.StatusOK {
		t.Errorf("entry status %d err %q, want the client gone", e.Status, e.Err)
	}
	if want := (Usage{Input: 50, Output: 1, CacheRead: 7}); e.Usage != want {
		t.Errorf("usage %+v, want what was seen, %+v", e.Usage, want)
	}
}

// TestUpstreamCutMidStream: a provider that breaks off mid-stream is
// recorded with what was seen and the cut; the client gets what came.
func TestUpstreamCutMidStream(t *testing.T) {
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, heldStart)
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the connection drops, the chunked body unfinished
	})
	up := newWitness(t, "", cut)
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up.URL)}}, Options{})
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(anthBody))
	xAPIKey(taskToken)(req)
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != heldStart {
		t.Errorf("client got %q", got)
	}
	e := gw.ledger.next(t)
	if !strings.Contains(e.Err, "answer cut") || e.Usage.Input != 50 {
		t.Errorf("entry %+v", e)
	}
}

// TestManyStreams: streams at once do not mix their usage.
func TestManyStreams(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 20 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"%d\"}}],\"usage\":null}\n\n", i)
			http.NewResponseController(w).Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%s,\"completion_tokens\":%s}}\n\ndata: [DONE]\n\n", n, n)
	})
	up := newWitness(t, "", handler)
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(OpenAIChat, up.URL)}}, Options{})
	const n = 12
	done := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/v1/chat/completions?n=%d", gw.URL, i), strings.NewReader(chatBody))
			bearerAuth(taskToken)(req)
			resp, err := gw.client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
	}
	seen := map[int64]bool{}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		e := gw.ledger.next(t)
		if e.Usage.Input != e.Usage.Output || seen[e.Usage.Input] {
			t.Errorf("usage %+v: mixed or counted twice", e.Usage)
		}
		seen[e.Usage.Input] = true
	}
}

// leavingClient sends a Messages request through a new gateway to
// upstream and returns the gateway, its answer, and cancel to leave it.
func leavingClient(t *testing.T, upstream *url.URL) (*rig, *http.Response, context.CancelFunc) {
	t.Helper()
	gw := newRig(t, authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, upstream)}}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(anthBody))
	xAPIKey(taskToken)(req)
	resp, err := gw.client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return gw, resp, cancel
}

// TestClientGoneAfterLastUsage: a client that leaves once it has the
// answer's last usage report (codex closes at response.completed, before
// the stream's own end) had the whole answer; the entry is not an error.
func TestClientGoneAfterLastUsage(t *testing.T) {
	up := newWitness(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, heldStart+heldEnd)
		http.NewResponseController(w).Flush()
		select { // the stream's end is late
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	gw, resp, cancel := leavingClient(t, up.URL)
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"message_start", "message_delta", "message_stop"} {
		if ev, err := readEvent(br); err != nil || !strings.Contains(ev, "event: "+want) {
			t.Fatalf("event %q, %v; want %s", ev, err, want)
		}
	}
	cancel()
	resp.Body.Close()
	e := gw.ledger.next(t)
	if want := (Usage{Input: 50, Output: 9, CacheRead: 7}); e.Usage != want || e.Err != "" {
		t.Errorf("entry usage %+v err %q, want %+v and no error", e.Usage, e.Err, want)
	}
}
