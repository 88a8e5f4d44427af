package modeltest

import (
	"net/http"
	"sync"
	"time"
)

// Arrivals records when each request reached a stand-in: a benchmark
// tells from it how long an agent CLI worked on a turn before asking the
// model, which no client of the CLI can take off.
type Arrivals struct {
	mu sync.Mutex
	at []time.Time
}

// Times returns the arrival times so far, in order.
func (a *Arrivals) Times() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.at...)
}

// wrap notes each request's arrival before h serves it.
func (a *Arrivals) wrap(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		a.mu.Lock()
		a.at = append(a.at, now)
		a.mu.Unlock()
		h(w, r)
	})
}
