package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// usageFlags are agorctl usage's flags as given.
type usageFlags struct {
	api                apiFlags
	user, period       string
	since, until       string
	asJSON             bool
	sinceSet, untilSet bool
}

func newUsage(a *app) *cobra.Command {
	var f usageFlags
	c := &cobra.Command{
		Use:   "usage",
		Short: "print model tokens and cost per person and model, and budgets",
		Long: `Print what the model gateway's ledger holds: a table of USER MODEL
REQUESTS IN OUT CACHE-READ CACHE-WRITE COST, one row per person and model.
The token counts are the providers' own, as each answer reported them: IN is
uncached input, CACHE-READ and CACHE-WRITE the prompt cache's. COST is in
gateway.currency, priced by gateway.prices when each request was made.

Then, while the gateway is on, a line per bound of each listed person's
budget (gateway.budgets), for instance

  alice: month cost 12.40 of 20.00 USD (62%), 1.10 reserved, 6.50 left, resets 2026-12-01

Budgets run per calendar day and month in the daemon's local time, whatever
period the table shows. Reserved is what the person's requests in flight
hold: each one's worst case (the output it asks for at most, plus its input
as estimated from its size), held from when it is authorised until its usage
is in the ledger. A request is sent only if its worst case fits in what is
left of every bound, so requests running at once cannot pass one together;
once a bound is reached her prompts are refused too until it resets.

The table covers this month by default (the daemon's local time); --period
day is today. --since and --until give any range: RFC 3339
(2026-11-01T09:00:00+01:00) or a date (2026-11-01, local midnight);
--until defaults to now. You see your own usage; root and members of
api.admin_group see everyone's, or --user's. /v1/metrics has this month's
as agor_model_tokens_total and agor_model_cost_micros_total.

` + daemonHelp,
		Example: `  agorctl usage
  agorctl usage --period day
  agorctl usage --user alice --since 2026-10-01 --until 2026-11-01
  agorctl usage --json`,
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.sinceSet, f.untilSet = cmd.Flags().Changed("since"), cmd.Flags().Changed("until")
			return runUsage(a, cmd, &f)
		},
	}
	addAPIFlags(c, &f.api)
	c.Flags().StringVar(&f.user, "user", "", "only this `user`'s usage (admins; others see their own)")
	c.Flags().StringVar(&f.period, "period", "", "the current `period`: day or month (default month)")
	c.Flags().StringVar(&f.since, "since", "", "from this `time` (RFC 3339, or YYYY-MM-DD: local midnight)")
	c.Flags().StringVar(&f.until, "until", "", "up to this `time`, excluded (default now; needs --since)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the daemon's JSON")
	_ = c.RegisterFlagCompletionFunc("user", completeUsers(&f.api))
	_ = c.RegisterFlagCompletionFunc("period", cobra.FixedCompletions([]string{"day", "month"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func runUsage(a *app, cmd *cobra.Command, f *usageFlags) error {
	q, err := f.query()
	if err != nil {
		return err
	}
	c, ctx, cancel := f.api.client(cmd.Context())
	defer cancel()
	rep, raw, err := c.Usage(ctx, q)
	if err != nil {
		return err
	}
	if f.asJSON {
		fmt.Fprintln(a.stdout, string(raw))
		return nil
	}
	if err := printUsage(a.stdout, rep); err != nil {
		return err
	}
	if len(rep.Rows) == 0 {
		fmt.Fprintf(a.stderr, "no model requests from %s to %s\n", rep.Since.Format(time.DateTime), rep.Until.Format(time.DateTime))
	}
	return nil
}

// query checks the flags as the daemon would, so that a mistake is a
// usage error (exit 2) said before anything is asked.
func (f *usageFlags) query() (apiclient.UsageQuery, error) {
	q := apiclient.UsageQuery{User: f.user, Period: f.period}
	switch {
	case f.period != "" && f.period != "day" && f.period != "month":
		return q, usageErrorf("--period: %q is neither day nor month", f.period)
	case f.period != "" && (f.sinceSet || f.untilSet):
		return q, usageErrorf("give --period, or --since and --until, not both")
	case f.untilSet && !f.sinceSet:
		return q, usageErrorf("--until needs --since")
	}
	var err error
	if f.sinceSet {
		if q.Since, err = parseWhen("--since", f.since); err != nil {
			return q, err
		}
	}
	if f.untilSet {
		q.Until, err = parseWhen("--until", f.until)
	}
	return q, err
}

// parseWhen reads an RFC 3339 time, or a date as local midnight.
func parseWhen(flag, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("%s: %q is neither an RFC 3339 time (2026-11-01T09:00:00Z) nor a date (2026-11-01)", flag, s)
}

// printUsage writes the table, then a line per budget bound.
func printUsage(w io.Writer, rep apiwire.UsageReport) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tMODEL\tREQUESTS\tIN\tOUT\tCACHE-READ\tCACHE-WRITE\tCOST")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.User, or(r.Model, "-"), r.Requests, r.InputTokens,
			r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, money(r.Cost))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Budgets) > 0 {
		fmt.Fprintln(w)
	}
	for _, b := range rep.Budgets {
		fmt.Fprintln(w, budgetLine(b, rep.Currency))
	}
	return nil
}

// money is a cost to the cent; a cost below one is not shown as nothing.
func money(v float64) string {
	if v > 0 && v < 0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", v)
}

// budgetLine is e.g. "alice: month cost 12.40 of 20.00 USD (62%), 1.10
// reserved, 6.50 left, resets 2026-12-01", the date the daemon's own;
// reserved is what her requests in flight hold.
func budgetLine(b apiwire.BudgetStanding, currency string) string {
	digits, unit := 0, ""
	if b.Kind == "cost" {
		digits, unit = 2, currency
	}
	amounts := strings.TrimSpace(fmt.Sprintf("%.*f of %.*f %s", digits, b.Spent, digits, b.Bound, unit))
	share := "-"
	if b.Bound > 0 {
		share = fmt.Sprintf("%.0f%%", 100*b.Spent/b.Bound)
	}
	if b.Bound > 0 && b.Spent >= b.Bound {
		share += ", reached"
	}
	return fmt.Sprintf("%s: %s %s %s (%s), %.*f reserved, %.*f left, resets %s", b.User, b.Period, b.Kind, amounts, share,
		digits, b.Reserved, digits, b.Left, b.ResetsAt.Format(time.DateOnly))
}
