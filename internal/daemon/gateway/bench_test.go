package gateway

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// BenchmarkGatewayStream: a streamed Anthropic answer from the stand-in,
// fetched directly and through the gateway, turn about. Reported: the
// time to the first byte of the body and to its end, each way, and the
// gateway's as a ratio of the direct one.
func BenchmarkGatewayStream(b *testing.B) {
	a := modeltest.NewAnthropic(b)
	up, err := url.Parse(a.URL)
	if err != nil {
		b.Fatal(err)
	}
	gw := newRig(b, authz{grants: map[string]Grant{taskToken: grantFor(Anthropic, up)}}, Options{})
	go func() { // the ledger is read as it fills
		for range gw.ledger {
		}
	}()
	b.Cleanup(func() { close(gw.ledger) })
	// No tools: the stand-in's short reply, which does not advance a script.
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	var direct, via timing
	b.ResetTimer()
	for b.Loop() {
		direct.add(b, gw.client, a.URL+"/v1/messages", body, xAPIKey(realKey))
		via.add(b, gw.client, gw.URL+"/v1/messages", body, xAPIKey(taskToken))
	}
	n := float64(direct.n)
	b.ReportMetric(float64(direct.first.Microseconds())/n, "direct-ttfb-µs")
	b.ReportMetric(float64(via.first.Microseconds())/n, "gateway-ttfb-µs")
	b.ReportMetric(float64(direct.whole.Microseconds())/n, "direct-total-µs")
	b.ReportMetric(float64(via.whole.Microseconds())/n, "gateway-total-µs")
	b.ReportMetric(float64(via.first)/float64(direct.first), "ttfb-ratio")
	b.ReportMetric(float64(via.whole)/float64(direct.whole), "total-ratio")
}

// timing sums the times to the first body byte and to the end.
type timing struct {
	first, whole time.Duration
	n            int
}

func (tm *timing) add(b *testing.B, c *http.Client, to, body string, set func(*http.Request)) {
	req, _ := http.NewRequest(http.MethodPost, to, strings.NewReader(body))
	set(req)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", to, resp.Status)
	}
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	tm.first += first
	tm.whole += time.Since(start)
	tm.n++
}
