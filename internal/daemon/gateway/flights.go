package gateway

import "sync"

// DefaultMaxInFlight is the per-person bound on model requests running
// at once when Options.MaxInFlight is 0.
const DefaultMaxInFlight = 16

// flights counts each person's requests running through the gateway.
// (Budgets are not bounded by it: each request in flight holds its worst
// case against them, Reserver.)
type flights struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newFlights(max int) *flights {
	if max <= 0 {
		max = DefaultMaxInFlight
	}
	return &flights{max: max, n: map[string]int{}}
}

// enter takes one of person's places, false when all are taken.
func (f *flights) enter(person string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[person] >= f.max {
		return false
	}
	f.n[person]++
	return true
}

// leave gives back a place enter took.
func (f *flights) leave(person string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[person]--; f.n[person] <= 0 {
		delete(f.n, person)
	}
}
