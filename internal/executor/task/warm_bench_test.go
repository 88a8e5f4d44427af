package task

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent"
	"github.com/agor-sh/agor/internal/executor/agent/agenttest"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// BenchmarkWarmFollowUp measures, per agent, what a session's follow-up
// prompt waits for: from sending execute_prompt to its first event
// reaching the daemon side, on the warm agent kept from the previous turn
// against a cold one (a new CLI process resuming the session from disk,
// as every prompt did before warm agents), with the stand-in model
// answering at once. 2×b.N follow-ups each way, alternating; medians,
// their ratio, and the resident memory of the warm agent (its whole
// process group), on which the warm_* defaults rest. Beside them, the
// floor: how long the warm CLI worked on the follow-up before its first
// request reached the stand-in model (no client of the CLI can take that
// off), and that floor's ratio to cold.
//
//	go test -run '^$' -bench WarmFollowUp -benchtime 5x ./internal/executor/task
func BenchmarkWarmFollowUp(b *testing.B) {
	home, err := os.MkdirTemp("", "agor-warm-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(home) })
	for _, c := range agenttest.Cases(b, home, 1000) {
		b.Run(c.Tool, func(b *testing.B) {
			warm := newBenchSide(b, Agents{c.Tool: {Binary: c.Binary, Env: c.Env}}, WarmLimits{Idle: time.Hour, PerUser: 4})
			// The cold side has a HOME of its own: gemini-cli keeps the
			// sessions of two cwds of the same name apart badly.
			coldEnv := maps.Clone(c.Env)
			coldEnv["HOME"] = filepath.Join(home, "cold-"+c.Tool)
			if err := os.MkdirAll(coldEnv["HOME"], 0o700); err != nil {
				b.Fatal(err)
			}
			cold := newBenchSide(b, Agents{c.Tool: {Binary: c.Binary, Env: coldEnv}}, WarmLimits{})
			warm.turn(c, "first")
			cold.turn(c, "first")
			var warmFirst, coldFirst, warmModel []time.Duration
			b.ResetTimer()
			for i := range 2 * b.N {
				warmFirst = append(warmFirst, warm.turn(c, "warm"))
				warmModel = append(warmModel, warm.toModel)
				if c.Tool == "gemini" && i > 0 {
					// gemini-cli 0.61 fails a second session/load of one
					// session within a minute ("No previous sessions found",
					// as before warm agents): a fresh session each time.
					b.StopTimer()
					cold.session = fmt.Sprint("s", i)
					cold.turn(c, "first")
					b.StartTimer()
				}
				coldFirst = append(coldFirst, cold.turn(c, "cold"))
			}
			b.StopTimer()
			w := warm.svc.pool()
			w.mu.Lock()
			a := w.agents[warmKey(protocol.ExecutePromptParams{SessionID: "s", Tool: c.Tool})]
			w.mu.Unlock()
			if a == nil {
				b.Fatal("no warm agent after the follow-ups")
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(median(warmFirst)), "warm-first-event-ms")
			b.ReportMetric(ms(median(coldFirst)), "cold-first-event-ms")
			b.ReportMetric(float64(median(warmFirst))/float64(median(coldFirst)), "warm/cold")
			b.ReportMetric(ms(median(warmModel)), "warm-to-model-request-ms")
			b.ReportMetric(float64(median(warmModel))/float64(median(coldFirst)), "floor/cold")
			b.ReportMetric(float64(agent.GroupRSS(a.live.Pid()))/(1<<20), "warm-agent-RSS-MiB")
			b.ReportMetric(float64(len(warmFirst)), "follow-ups")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchSide is one executor's task service and the daemon side of it.
type benchSide struct {
	b       *testing.B
	d       *daemonSide
	svc     *Service
	call    func(p map[string]any) protocol.ExecutePromptResult
	n       int
	session string
	first   time.Time
	toModel time.Duration // the last turn's: from the call to the model's first request
}

func newBenchSide(b *testing.B, agents Agents, l WarmLimits) *benchSide {
	s := &benchSide{b: b, d: &daemonSide{key: "sk-bench-0001", approve: true}, session: "s"}
	conn, _, svc := setupService(b, s.d, func(svc *Service) { svc.Agents, svc.Warm = agents, l })
	s.svc = svc
	s.d.onEvent = func(message) {
		if s.first.IsZero() {
			s.first = time.Now()
		}
	}
	s.call = func(p map[string]any) protocol.ExecutePromptResult {
		var res protocol.ExecutePromptResult
		if err := conn.Call(context.Background(), protocol.MethodExecutePrompt, p, &res); err != nil || res.Status != "completed" {
			b.Fatalf("execute_prompt %s: %v, %+v", p["task_id"], err, res)
		}
		return res
	}
	return s
}

// turn runs one prompt of the side's session and returns when its first event
// came, after the call.
func (s *benchSide) turn(c agenttest.Case, kind string) time.Duration {
	s.n++
	p := prompt(fmt.Sprint(kind, "-", s.n), c.Plain)
	p["agentic_tool"], p["session_id"], p["timeout_ms"] = c.Tool, s.session, 120000
	s.d.mu.Lock()
	s.first = time.Time{}
	s.d.mu.Unlock()
	start := time.Now()
	res := s.call(p)
	s.toModel = 0
	for _, at := range c.Arrivals() {
		if at.After(start) {
			s.toModel = at.Sub(start)
			break
		}
	}
	if want := kind == "warm"; res.Warm != want {
		s.b.Fatalf("%s follow-up ran warm=%v", kind, res.Warm)
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.first.IsZero() {
		s.b.Fatal("no event")
	}
	return s.first.Sub(start)
}
