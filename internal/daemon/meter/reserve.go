package meter

import (
	"fmt"
	"math"
	"sync"

	"github.com/agor-sh/agor/internal/daemon/gateway"
)

var _ gateway.Reserver = (*Meter)(nil)

// hold is what a person's requests in flight may still spend: tokens,
// and cost in millionths of the currency.
type hold struct{ tokens, micros int64 }

// holds are the reservations of the requests in flight, by person. They
// are kept in memory only, and that is enough: a reservation lives as
// long as its request, and a daemon restart ends every request in
// flight (the gateway is the daemon's), so after one there is nothing
// to hold; what they spent is in the ledger.
type holds struct {
	mu    sync.Mutex
	by    map[string]hold
	locks map[string]*sync.Mutex // one a person: check and reserve together
}

// lockOf is person's check-and-reserve lock. One per person who made a
// request since the daemon started: a bounded set (the host's accounts).
func (h *holds) lockOf(person string) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = map[string]*sync.Mutex{}
	}
	l := h.locks[person]
	if l == nil {
		l = &sync.Mutex{}
		h.locks[person] = l
	}
	return l
}

func (h *holds) of(person string) hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.by[person]
}

// add adds d (negative to release) to person's holds.
func (h *holds) add(person string, d hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]hold{}
	}
	sum := hold{h.by[person].tokens + d.tokens, h.by[person].micros + d.micros}
	if sum == (hold{}) {
		delete(h.by, person)
		return
	}
	h.by[person] = sum
}

// Reserve implements gateway.Reserver: a request for a model nothing
// prices is refused; otherwise its worst case (config.Reserve.Worst)
// must fit each bound of its person's budget on top of what she has
// spent and what her other requests in flight hold, or it is refused
// with the budget's message. A request with her own subscription, and
// a token count, hold nothing.
func (m *Meter) Reserve(g gateway.Grant, ask gateway.Ask) (func(), error) {
	if g.Own || ask.Count {
		return func() {}, nil
	}
	cfg := m.Config()
	price, ok := cfg.PriceFor(ask.Model)
	if !ok {
		m.log().Warn("gateway: a request for an unpriced model refused", "user", g.Person, "task", g.Task, "model", ask.Model)
		return nil, &gateway.Refusal{Status: 403, Message: UnpricedMessage(ask.Model)}
	}
	tokens, micros := cfg.Reserve.Worst(price, ask.MaxOutput, ask.Bytes)
	want := hold{tokens, micros}
	l := m.holds.lockOf(g.Person)
	l.Lock()
	defer l.Unlock()
	st, err := m.Standings(g.Person) // what is spent, and held
	if err != nil {
		m.log().Error("gateway: budget not checked", "user", g.Person, "err", err)
		return nil, &gateway.Refusal{Status: 503, Message: "agor: the budget could not be checked; try again"}
	}
	for _, s := range st {
		if past(s, want) {
			msg := BudgetMessage(s, cfg.Currency)
			m.log().Info("gateway: a request's worst case is past the budget", "user", g.Person, "task", g.Task,
				"period", s.Period, "kind", s.Kind, "spent", s.Spent, "reserved", s.Reserved, "request", want.in(s.Kind), "bound", s.Bound)
			return nil, &gateway.Refusal{Status: 403, Message: msg}
		}
	}
	m.holds.add(g.Person, want)
	m.log().Debug("gateway: reserved", "user", g.Person, "task", g.Task, "tokens", tokens, "micros", micros, "standings", st)
	var once sync.Once
	return func() { once.Do(func() { m.holds.add(g.Person, hold{-want.tokens, -want.micros}) }) }, nil
}

// past says whether want, on top of what s has spent and reserved,
// passes its bound: compared in whole tokens or micros, so that a
// bound the sum meets exactly is not passed by a rounding error.
func past(s Standing, want hold) bool {
	unit := 1.0
	if s.Kind == "cost" {
		unit = 1e6
	}
	return s.Bound > 0 && math.Round((s.Spent+s.Reserved+want.in(s.Kind))*unit) > math.Round(s.Bound*unit)
}

// in is the hold in a Standing's kind and unit.
func (h hold) in(kind string) float64 {
	if kind == "cost" {
		return float64(h.micros) / 1e6
	}
	return float64(h.tokens)
}

// UnpricedMessage is what a request for a model no price covers is told.
func UnpricedMessage(model string) string {
	if model == "" {
		model = "(none named)"
	}
	return fmt.Sprintf("agor: model %s has no price; an admin must price it (gateway.prices) or list it as free (gateway.free)", model)
}
