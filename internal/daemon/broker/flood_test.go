package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// TestFlood: alice's executor fires 10,000 get_api_key calls at once. Most
// are refused by her connection's limiter; bob's executor, calling during
// the flood, is served every time; the trail shows the flood aggregated.
func TestFlood(t *testing.T) {
	t.Parallel()
	const calls = 10_000
	e := newEnv(t, envOpts{}) // default limits: 50/s, burst 100
	aliceTok := e.start(t, "alice", "t1", ModeDefault)
	bobTok := e.start(t, "bob", "t2", ModeDefault)
	alice, bob := e.executor(t, "alice"), e.executor(t, "bob")
	ctx := context.Background()

	var ok, throttled, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range calls {
		wg.Go(func() {
			<-start
			_, err := getKey(ctx, alice, aliceTok, "ANTHROPIC_API_KEY")
			switch {
			case err == nil:
				ok.Add(1)
			case rpc.IsCode(err, rpc.CodeLimitReached) && reasonOf(err) == "too_many_requests":
				throttled.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	close(start)
	floodDone := make(chan struct{})
	go func() { wg.Wait(); close(floodDone) }()
	bobCalls, bobErrs := bobDuringFlood(ctx, bob, bobTok, floodDone)
	<-floodDone
	for _, err := range bobErrs {
		t.Errorf("bob's call failed during alice's flood: %v", err)
	}
	if bobCalls == 0 {
		t.Error("the flood ended before bob could call: nothing shown")
	}
	t.Logf("alice: %d served, %d throttled, %d other; bob: %d calls during the flood", ok.Load(), throttled.Load(), other.Load(), bobCalls)
	if other.Load() != 0 {
		t.Errorf("%d calls failed for another reason", other.Load())
	}
	if throttled.Load() < calls/2 {
		t.Errorf("only %d of %d calls throttled", throttled.Load(), calls)
	}
	if got := e.b.Stats().Throttled; got != throttled.Load() {
		t.Errorf("Stats.Throttled = %d, callers saw %d", got, throttled.Load())
	}
	must(t, e.audit.Flush())
	recs := e.audit.Query(audit.Filter{Action: audit.RateLimited})
	total := 0
	for _, r := range recs {
		if r.User != "alice" {
			t.Errorf("rate_limited record for %q", r.User)
		}
		total += r.Count
	}
	if int64(total) < throttled.Load() || len(recs) > 10 {
		t.Errorf("trail: %d rate_limited records counting %d, want few records counting ≥ %d", len(recs), total, throttled.Load())
	}
}

// bobDuringFlood calls on bob's connection every 2 ms until the flood is
// over (at most 90 calls, inside bob's own burst) and returns how many
// calls it made and the failures.
func bobDuringFlood(ctx context.Context, bob *rpc.Conn, tok string, floodDone <-chan struct{}) (int, []error) {
	var errs []error
	for n := 0; n < 90; n++ {
		select {
		case <-floodDone:
			return n, errs
		default:
		}
		if _, err := getKey(ctx, bob, tok, "OPENAI_API_KEY"); err != nil {
			errs = append(errs, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 90, errs
}

func BenchmarkGetAPIKey(b *testing.B) {
	e := newEnv(b, envOpts{limits: Limits{Rate: rate.Inf, Burst: 1}})
	tok := e.start(b, "alice", "t1", ModeDefault)
	alice := e.executor(b, "alice")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := getKey(ctx, alice, tok, "ANTHROPIC_API_KEY"); err != nil {
			b.Fatal(err)
		}
	}
}
