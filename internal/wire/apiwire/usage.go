package apiwire

import "time"

// UsageReport is GET /v1/usage's reply: the model gateway's ledger summed
// per person and model over [Since, Until), and, while the gateway is on,
// each listed person's spend against her budget in the current day and
// month (whatever the period asked for: a bound is always of those).
type UsageReport struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Currency is the unit of every cost, as gateway.currency names it;
	// empty while the gateway is off (the rows were priced in the unit
	// configured when they were written).
	Currency string           `json:"currency"`
	Rows     []UsageRow       `json:"rows"`
	Budgets  []BudgetStanding `json:"budgets,omitempty"`
}

// UsageRow is one person's requests to one model: the token counts are
// the providers' own, as their answers reported them; Cost is what the
// price table made of them when each request was written.
type UsageRow struct {
	User             string  `json:"user"`
	Model            string  `json:"model"`
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"input_tokens"` // uncached
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	Cost             float64 `json:"cost"` // in Currency
}

// BudgetStanding is a person's spend against one bound of her budget:
// Period "day" or "month", Kind "cost" (in Currency) or "tokens" (every
// kind together). Reserved is what her requests in flight hold (each
// one's worst case, until its usage is in the ledger); Left is Bound
// less Spent and Reserved, 0 at least. A request is sent only when its
// worst case fits in Left.
type BudgetStanding struct {
	User     string    `json:"user"`
	Period   string    `json:"period"`
	Kind     string    `json:"kind"`
	Spent    float64   `json:"spent"`
	Reserved float64   `json:"reserved"`
	Left     float64   `json:"left"`
	Bound    float64   `json:"bound"`
	ResetsAt time.Time `json:"resets_at"`
}
