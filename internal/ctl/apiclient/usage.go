package apiclient

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// UsageQuery selects GET /v1/usage: User's rows (admins; a person is
// shown her own), over Period ("day" or "month": the current one) or
// from Since to Until (zero: now). Nothing set is this month.
type UsageQuery struct {
	User, Period string
	Since, Until time.Time
}

// Usage is the model gateway's ledger summed per person and model, with
// the budget standings while the gateway is on.
func (c *Client) Usage(ctx context.Context, q UsageQuery) (apiwire.UsageReport, json.RawMessage, error) {
	v := url.Values{}
	if q.User != "" {
		v.Set("user", q.User)
	}
	if q.Period != "" {
		v.Set("period", q.Period)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano)) // as precise as asked
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	var out apiwire.UsageReport
	raw, err := c.call(ctx, "GET", "/v1/usage?"+v.Encode(), nil, &out)
	return out, raw, err
}
