package task

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/childenv"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// BenchmarkAgentOverhead measures, per agent, what the executor adds to a
// turn of the real CLI against its stand-in. The agent's own start-up and
// first answer (1-5 s, varying by ±100 ms) swamp any difference between
// running the adapter in-process and through execute_prompt, so the
// executor's share is timed where it happens: from sending
// execute_prompt to the adapter starting the CLI (token check, key fetch
// over rpc, environment), and from each event the adapter emits to its
// report_message reaching the daemon side. The first-event times, both
// ways, are reported for scale. b.N turns each way, alternating, after
// one tool turn to warm up; medians.
//
//	go test -run '^$' -bench AgentOverhead -benchtime 5x ./internal/executor/task
func BenchmarkAgentOverhead(b *testing.B) {
	home := b.TempDir()
	// Claude's stand-in plays a script: enough turns for any b.N here.
	for _, c := range agenttest.Cases(b, home, 1000) {
		b.Run(c.Tool, func(b *testing.B) {
			inner, err := agent.Lookup(c.Tool)
			if err != nil {
				b.Fatal(err)
			}
			timed := &timedAdapter{inner: inner}
			tool := "timed-" + c.Tool
			agent.Register(tool, timed)
			d := &daemonSide{key: "sk-bench-0001", approve: true}
			conn, cwd := setupWith(b, d, Agents{tool: {Binary: c.Binary, Env: c.Env}})
			var arrived []time.Time
			d.onEvent = func(m message) { arrived = append(arrived, time.Now()) }
			var pre, fwd, viaFirst, directFirst []time.Duration
			via := func(i int, text string) {
				d.mu.Lock()
				arrived = arrived[:0]
				d.mu.Unlock()
				timed.reset()
				p := prompt(fmt.Sprint("bench-", c.Tool, i), text)
				p["agentic_tool"], p["session_id"], p["timeout_ms"] = tool, fmt.Sprint("s", i), 120000
				start := time.Now()
				var res protocol.ExecutePromptResult
				if err := conn.Call(context.Background(), "execute_prompt", p, &res); err != nil || res.Status != "completed" {
					b.Fatalf("execute_prompt: %v, %+v", err, res)
				}
				d.mu.Lock()
				defer d.mu.Unlock()
				if len(arrived) != len(timed.emitted) || len(arrived) == 0 {
					b.Fatalf("%d events emitted, %d arrived", len(timed.emitted), len(arrived))
				}
				pre = append(pre, timed.entered.Sub(start))
				viaFirst = append(viaFirst, arrived[0].Sub(start))
				for j := range arrived {
					fwd = append(fwd, arrived[j].Sub(timed.emitted[j]))
				}
			}
			direct := func(i int) {
				h := &firstHost{}
				req := agent.Request{SessionID: fmt.Sprint("d", i), TaskID: fmt.Sprint("direct-", i), Prompt: c.Plain, Cwd: cwd,
					PermissionMode: "default", Binary: c.Binary,
					Env: childenv.Configured(os.Environ(), map[string]string{inner.CredentialKey(): d.key}, c.Env)}
				h.start = time.Now()
				res, err := inner.Run(context.Background(), req, h)
				if err != nil || res.Status != "completed" {
					b.Fatalf("in-process turn: %v, %+v", err, res)
				}
				directFirst = append(directFirst, h.first.Sub(h.start))
			}
			via(-1, c.ToolPrompt) // warm-up: first start of the CLI, settings written
			pre, fwd, viaFirst = nil, nil, nil
			b.ResetTimer()
			for i := range b.N {
				direct(i)
				via(i, c.Plain)
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(median(directFirst)), "in-process-first-event-ms")
			b.ReportMetric(ms(median(viaFirst)), "executor-first-event-ms")
			b.ReportMetric(float64(median(pre).Microseconds()), "before-agent-us")
			b.ReportMetric(float64(median(fwd).Microseconds()), "forward-event-us")
			b.ReportMetric(float64(len(fwd))/float64(b.N), "events/turn")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// timedAdapter runs inner, noting when the executor handed it the turn
// and when each event was emitted.
type timedAdapter struct {
	inner   agent.Adapter
	mu      sync.Mutex
	entered time.Time
	emitted []time.Time
}

func (t *timedAdapter) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entered, t.emitted = time.Time{}, nil
}

func (t *timedAdapter) CredentialKey() string { return t.inner.CredentialKey() }

func (t *timedAdapter) Run(ctx context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	t.mu.Lock()
	t.entered = time.Now()
	t.mu.Unlock()
	return t.inner.Run(ctx, req, &timedHost{Host: h, t: t})
}

type timedHost struct {
	agent.Host
	t *timedAdapter
}

// Emit notes the time before handing the event on: the host forwards it
// synchronously, in order.
func (h *timedHost) Emit(ev agent.Event) {
	h.t.mu.Lock()
	h.t.emitted = append(h.t.emitted, time.Now())
	h.t.mu.Unlock()
	h.Host.Emit(ev)
}

// BenchmarkForwarding measures the executor's event forwarding rate:
// an adapter emitting events as fast as it can, each normalised event
// numbered and sent to the daemon side as report_message, against the
// same adapter's emit rate in-process. Forwarding is the same code for
// every agent (they differ only in the line parser before it).
func BenchmarkForwarding(b *testing.B) {
	const n = 20000
	d := &daemonSide{key: "k"}
	conn, _ := setupWith(b, d, nil)
	var rates []float64
	for i := range b.N {
		var mu sync.Mutex
		var firstAt, lastAt time.Time
		count := 0
		d.mu.Lock()
		d.events = nil
		d.onEvent = func(message) {
			mu.Lock()
			defer mu.Unlock()
			if count == 0 {
				firstAt = time.Now()
			}
			count++
			lastAt = time.Now()
		}
		d.mu.Unlock()
		p := prompt(fmt.Sprint("burst-", i), strconv.Itoa(n))
		p["agentic_tool"] = "burst"
		var res protocol.ExecutePromptResult
		if err := conn.Call(context.Background(), "execute_prompt", p, &res); err != nil || res.Status != "completed" {
			b.Fatalf("execute_prompt: %v, %+v", err, res)
		}
		mu.Lock()
		if count != n {
			b.Fatalf("%d events forwarded, want %d", count, n)
		}
		rates = append(rates, float64(n)/lastAt.Sub(firstAt).Seconds())
		mu.Unlock()
	}
	slices.Sort(rates)
	b.ReportMetric(rates[len(rates)/2], "events/s")
}

// burstAgent emits as many text deltas as its prompt says.
type burstAgent struct{}

func (burstAgent) CredentialKey() string { return "BURST_API_KEY" }

func (burstAgent) Run(_ context.Context, req agent.Request, h agent.Host) (agent.Result, error) {
	n, _ := strconv.Atoi(req.Prompt)
	for i := range n {
		h.Emit(agent.Event{Type: protocol.EventTextDelta, Data: map[string]any{"text": "token " + strconv.Itoa(i) + " "}})
	}
	return agent.Result{Status: "completed", MessageCount: 1}, nil
}

func init() { agent.Register("burst", burstAgent{}) }

// firstHost notes when the first event came; it approves every question.
type firstHost struct {
	mu           sync.Mutex
	start, first time.Time
}

func (h *firstHost) Emit(agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
}

func (h *firstHost) Ask(context.Context, string, json.RawMessage) agent.Decision {
	return agent.Decision{Approved: true, Reason: "bench"}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
