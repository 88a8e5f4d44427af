package task

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// BenchmarkFirstPrompt measures, per agent, what a person waits for on a
// session's first prompt, with and without pre-warming, against the
// warm follow-up. Two times per prompt, from sending execute_prompt:
// to-model, until the stand-in model has the request carrying the
// prompt (opencode's title request, which offers no tools, is not it);
// to-answer, until the first event made of the model's answer
// (assistant message, text, thinking, tool call) reaches the daemon
// side: not any first event (a sandbox event, say, comes before any
// work). Sides, each a new session, rotated within a round to spread
// the host's load: cold (no pre-warm: the CLI starts with the prompt);
// racing (prewarm_agent, then at once the prompt: agorctl with a prompt
// already written); pre-ready (prewarm_agent, its handshake over, then
// a second of typing); warm (the pre-ready session's second prompt).
// 2×b.N+1 rounds; medians, ratios, and the resident memory of a
// pre-warmed agent before its prompt (its process group).
//
//	go test -run '^$' -bench FirstPrompt -benchtime 5x ./internal/executor/task
func BenchmarkFirstPrompt(b *testing.B) {
	home, err := os.MkdirTemp("", "agor-first-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(home) })
	script := make([]modeltest.AnthTurn, 4000)
	for i := range script {
		script[i] = modeltest.AnthTurn{Text: "hello"}
	}
	for _, c := range agenttest.CasesScripted(b, home, agenttest.Command, script...) {
		b.Run(c.Tool, func(b *testing.B) { benchFirstPrompt(b, c) })
	}
}

func benchFirstPrompt(b *testing.B, c agenttest.Case) {
	s := newFirstSide(b, c)
	s.turn("warmup", false, false) // fills the CLI's caches in HOME
	s.release("warmup")
	t := map[string]*timings{}
	for _, k := range []string{"cold", "racing", "pre", "warm"} {
		t[k] = &timings{}
	}
	var rss []float64
	b.ResetTimer()
	for i := range 2*b.N + 1 {
		sides := []func(){
			func() { t["cold"].add(s.turn(fmt.Sprint("c", i), false, false)) },
			func() { t["racing"].add(s.racing(fmt.Sprint("r", i))) },
			func() {
				id := fmt.Sprint("p", i)
				rss = append(rss, s.ready(id))
				t["pre"].add(s.turn(id, true, false))
				t["warm"].add(s.turn(id, false, true))
			},
		}
		for j := range sides {
			sides[(i+j)%len(sides)]()
		}
		for _, id := range []string{"c", "r", "p"} {
			s.release(fmt.Sprint(id, i))
		}
	}
	b.StopTimer()
	reportFirst(b, t, rss, s.racedWarm)
}

// timings are one side's times.
type timings struct{ model, answer []time.Duration }

func (t *timings) add(model, answer time.Duration) {
	t.model, t.answer = append(t.model, model), append(t.answer, answer)
}

func reportFirst(b *testing.B, t map[string]*timings, rss []float64, racedWarm int) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, k := range []string{"cold", "racing", "pre", "warm"} {
		b.ReportMetric(ms(median(t[k].model)), k+"-to-model-ms")
		b.ReportMetric(ms(median(t[k].answer)), k+"-to-answer-ms")
	}
	ratio := func(x, y []time.Duration) float64 { return float64(median(x)) / float64(median(y)) }
	b.ReportMetric(ratio(t["pre"].answer, t["warm"].answer), "pre/warm-answer")
	b.ReportMetric(ratio(t["pre"].answer, t["cold"].answer), "pre/cold-answer")
	b.ReportMetric(ratio(t["racing"].answer, t["cold"].answer), "racing/cold-answer")
	b.ReportMetric(ratio(t["pre"].model, t["warm"].model), "pre/warm-model")
	slices.Sort(rss)
	b.ReportMetric(rss[len(rss)/2], "prewarmed-RSS-MiB")
	b.ReportMetric(float64(racedWarm), "racing-prewarmed")
	b.ReportMetric(float64(len(t["pre"].answer)), "rounds")
	b.ReportMetric(0, "ns/op")
}

// firstSide is one executor with pre-warming on, its gateway socket
// relayed to the case's stand-in.
type firstSide struct {
	b         *testing.B
	c         agenttest.Case
	d         *daemonSide
	svc       *Service
	conn      *rpc.Conn
	n         int
	answer    time.Time // the current prompt's first answer event
	racedWarm int       // racing prompts that ran on their pre-warm
}

func newFirstSide(b *testing.B, c agenttest.Case) *firstSide {
	s := &firstSide{b: b, c: c, d: &daemonSide{key: "sk-bench-0001", approve: true}}
	s.conn, _, s.svc = setupService(b, s.d, func(svc *Service) {
		svc.Agents = Agents{c.Tool: {Binary: c.Binary, Env: c.Env}}
		svc.Warm = WarmLimits{Idle: time.Hour, PerUser: 8, PrewarmIdle: time.Hour}
		svc.GatewaySocket = gatewayFor(b, c)
	})
	s.d.onEvent = func(m message) { // d.mu held
		if s.answer.IsZero() && answerEvent(m.Event) {
			s.answer = time.Now()
		}
	}
	return s
}

// answerEvent says ev is made of the model's answer.
func answerEvent(ev protocol.Event) bool {
	switch ev.Type {
	case protocol.EventMessageStart:
		return ev.Data["role"] == "assistant"
	case protocol.EventTextDelta, protocol.EventThinkingDelta, protocol.EventToolCall:
		return true
	}
	return false
}

func (s *firstSide) token(session string) string { return "agor-gw2.t." + session + ".0.bench" }

// prewarm starts session's agent.
func (s *firstSide) prewarm(session string) {
	p := map[string]any{"session_id": session, "agentic_tool": s.c.Tool, "cwd": "work", "permission_mode": "default", "gateway": true}
	var res protocol.PrewarmAgentResult
	if err := s.conn.Call(context.Background(), protocol.MethodPrewarmAgent, p, &res); err != nil || !res.Started {
		s.b.Fatalf("prewarm_agent %s: %+v %v", session, res, err)
	}
}

// ready pre-warms session, waits for its handshake and a second of
// typing, and returns the pre-warmed agent's resident memory in MiB.
func (s *firstSide) ready(session string) float64 {
	s.prewarm(session)
	w := s.svc.pool()
	w.mu.Lock()
	live := w.agents[keyOf(session, s.c.Tool)].live
	w.mu.Unlock()
	waitHandshake(live)
	time.Sleep(time.Second)
	return float64(agent.GroupRSS(live.Pid())) / (1 << 20)
}

// racing pre-warms session and sends its prompt at once.
func (s *firstSide) racing(session string) (time.Duration, time.Duration) {
	s.prewarm(session)
	return s.turnAs(session, nil)
}

// turn runs one prompt of session, wanting it prewarmed or warm as said.
func (s *firstSide) turn(session string, prewarmed, warm bool) (time.Duration, time.Duration) {
	return s.turnAs(session, func(res protocol.ExecutePromptResult) {
		if res.Prewarmed != prewarmed || res.Warm != warm {
			s.b.Fatalf("%s: prewarmed=%v warm=%v, want %v %v", session, res.Prewarmed, res.Warm, prewarmed, warm)
		}
	})
}

func (s *firstSide) turnAs(session string, check func(protocol.ExecutePromptResult)) (time.Duration, time.Duration) {
	s.n++
	text := fmt.Sprintf("%s (%d)", s.c.Plain, s.n)
	p := prompt(fmt.Sprint("t", s.n), text)
	p["agentic_tool"], p["session_id"], p["timeout_ms"], p["gateway_token"] = s.c.Tool, session, 120000, s.token(session)
	s.d.mu.Lock()
	s.answer = time.Time{}
	s.d.mu.Unlock()
	start := time.Now()
	var res protocol.ExecutePromptResult
	if err := s.conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil || res.Status != "completed" {
		s.b.Fatalf("execute_prompt %s: %v %+v", session, err, res)
	}
	if check != nil {
		check(res)
	} else if res.Prewarmed {
		s.racedWarm++
	}
	at := s.c.PromptAt(text, start)
	s.d.mu.Lock()
	answer := s.answer
	s.d.mu.Unlock()
	if at.IsZero() || answer.IsZero() {
		s.b.Fatalf("%s: no model request with the prompt (%v) or no answer event (%v)", session, at, answer)
	}
	return at.Sub(start), answer.Sub(start)
}

// release stops session's agent, as the host cap would.
func (s *firstSide) release(session string) {
	s.svc.pool().release(keyOf(session, s.c.Tool), 0, "bench")
}
