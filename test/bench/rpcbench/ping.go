package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// pinger is a client of one side.
type pinger interface {
	ping() error
	pipeline(n, g int) error
}

// side is one client and server pair measured.
type side struct {
	name string
	p    pinger
	lat  []time.Duration // sequential round trips, over all rounds
	rate []float64       // pipelined calls/s, one per round
}

// benchPing alternates rounds of sequential pings, then rounds of
// pipelined pings, between three pairs: our client with the executor, and
// with the trivial server (so that the servers are compared alone); and,
// for reference, the trivial client with the trivial server, where the
// caller reads its own response (no read loop, no multiplexing).
func benchPing(cfg config, ours, trivial string) error {
	ctx := context.Background()
	a, err := rpc.Dial(ctx, ours, nil, rpc.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := rpc.Dial(ctx, trivial, nil, rpc.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	t, err := dialTrivial(trivial)
	if err != nil {
		return err
	}
	defer t.nc.Close()
	sides := []*side{{name: "ours", p: rpcPinger{a.Conn}}, {name: "trivial", p: rpcPinger{b.Conn}}, {name: "trivial pair", p: t}}
	for _, s := range sides {
		if err := sequential(s, 2000); err != nil { // warm up
			return err
		}
		s.lat = s.lat[:0]
	}
	rounds := max(cfg.rounds, 1)
	for r := range rounds {
		for _, s := range order(sides, r) {
			if err := sequential(s, cfg.pings/rounds); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	for r := range rounds {
		for _, s := range order(sides, r) {
			start := time.Now()
			if err := s.p.pipeline(cfg.pipelined, cfg.goroutines); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.rate = append(s.rate, float64(cfg.pipelined)/time.Since(start).Seconds())
		}
	}
	printPing(sides, rounds, cfg.goroutines)
	return nil
}

// order rotates which side goes first, so none always runs in the same
// place.
func order(sides []*side, round int) []*side {
	k := round % len(sides)
	return append(slices.Clone(sides[k:]), sides[:k]...)
}

func sequential(s *side, n int) error {
	for range n {
		t0 := time.Now()
		if err := s.p.ping(); err != nil {
			return err
		}
		s.lat = append(s.lat, time.Since(t0))
	}
	return nil
}

type rpcPinger struct{ c *rpc.Conn }

func (r rpcPinger) ping() error { return r.c.Call(context.Background(), "ping", nil, nil) }

// pipeline makes n calls from g goroutines at once on one connection.
func (r rpcPinger) pipeline(n, g int) error {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := r.ping(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func printPing(sides []*side, rounds, g int) {
	ours, tr, pair := sides[0], sides[1], sides[2]
	for _, s := range sides {
		slices.Sort(s.lat)
		slices.Sort(s.rate)
	}
	p := func(s *side, q int) time.Duration { return s.lat[len(s.lat)*q/100] }
	fmt.Printf("ping round trip, %d sequential calls each in %d alternating rounds (ours, trivial: our rpc client):\n", len(ours.lat), rounds)
	for _, s := range sides {
		fmt.Printf("  %-13s p50 %7s  p99 %7s  max %8s\n", s.name, us(p(s, 50)), us(p(s, 99)), us(s.lat[len(s.lat)-1]))
	}
	fmt.Printf("  ratio         p50 %.2f× trivial (target ≤ 1.20), p99 %.2f×; vs trivial pair p50 %.2f×\n",
		ratio(p(ours, 50), p(tr, 50)), ratio(p(ours, 99), p(tr, 99)), ratio(p(ours, 50), p(pair, 50)))
	fmt.Printf("pipelined ping, %d calls in flight on one connection (rpc client: %d goroutines), median of %d rounds:\n", g, g, rounds)
	for _, s := range sides {
		fmt.Printf("  %-13s %8.0f calls/s  (rounds %.0f..%.0f)\n", s.name, median(s.rate), s.rate[0], s.rate[len(s.rate)-1])
	}
	fmt.Printf("  ratio         %.2f× trivial (target ≥ 0.80); vs trivial pair %.2f×\n",
		median(ours.rate)/median(tr.rate), median(ours.rate)/median(pair.rate))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// median of sorted values.
func median(v []float64) float64 {
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d.Nanoseconds())/1000) }
