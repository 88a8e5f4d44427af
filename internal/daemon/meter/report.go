package meter

// Currency is the unit of the ledger's costs and the cost budgets, as
// the configuration says now: read per call, since prices and budgets
// are reloaded with the configuration and the currency with them.
func (m *Meter) Currency() string { return m.Config().Currency }

// Direct implements the API's Gateway: tool's model calls bypass the
// gateway (gateway.direct_agents, as of the daemon's start).
func (m *Meter) Direct(tool string) bool { return m.Config().Direct(tool) }
