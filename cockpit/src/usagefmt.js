/* global cockpit */
// GET /v1/usage as the page shows it, worded and formatted as `agorctl
// usage` prints it (internal/ctl/cli/modelusage.go): the table's cells,
// a total, each budget bound's line with its share and state. Plain
// data in, plain data out, so that node's test runner can check it.

const _ = cockpit.gettext;

// WARN_AT is the share of a bound from which its bar warns, as the
// daemon tells a running task at 80% (meter.WarnAt).
export const WARN_AT = 0.8;

// fixed is Go's fmt "%.{d}f": toFixed, except that an exact tie rounds
// to even (62.5% is "62%" in agorctl), where toFixed rounds it up.
export function fixed(x, d) {
	const s = x.toFixed(d);
	const m = Math.abs(x);
	// A tie at d decimals is m = k/2^(d+1): its decimals are then exact
	// in toFixed(d+1), and the last of them is the 5.
	if (!Number.isInteger(m * 2 ** (d + 1)) || m >= 1e21) return s;
	const exact = m.toFixed(d + 1);
	if (!exact.endsWith("5")) return s;
	const down = exact.slice(0, d === 0 ? -2 : -1);
	if (Number(down.at(-1)) % 2 !== 0) return s;
	return (x < 0 ? "-" : "") + down;
}

// money is a cost to the cent; a cost below one is not shown as nothing.
export function money(v) {
	const n = Number(v) || 0;
	return n > 0 && n < 0.005 ? "<0.01" : fixed(n, 2);
}

// count is a token or request count as agorctl prints it (%d).
export const count = (n) => String(Math.trunc(Number(n) || 0));

// stamp is an RFC 3339 time from the daemon as time.DateTime, in the
// daemon's zone (the offset it wrote), as agorctl prints it.
export function stamp(t) {
	const s = String(t || "");
	return /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(s) ? s.slice(0, 10) + " " + s.slice(11, 19) : s;
}

// day is an RFC 3339 time's date in the daemon's zone (time.DateOnly).
const day = (t) => stamp(t).slice(0, 10);

const fields = ["requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"];

// usageRows are the table's rows: {user, model, cells} per row of the
// report, the cells USER MODEL REQUESTS IN OUT CACHE-READ CACHE-WRITE
// COST; total is their sum's cells (null without rows).
export function usageRows(rep) {
	const rows = (rep && Array.isArray(rep.rows)) ? rep.rows : [];
	const out = rows.map(r => ({
		user: String(r.user ?? ""),
		model: String(r.model ?? ""),
		cells: [String(r.user ?? ""), r.model ? String(r.model) : "-", ...fields.map(f => count(r[f])), money(r.cost)],
	}));
	if (out.length === 0) return { rows: out, total: null };
	const sum = (f) => rows.reduce((a, r) => a + (Number(r[f]) || 0), 0);
	return { rows: out, total: [_("Total"), "", ...fields.map(f => count(sum(f))), money(sum("cost"))] };
}

// heads are the table's headings; the cost's names the currency.
export function heads(currency) {
	return [_("Person"), _("Model"), _("Requests"), _("In"), _("Out"), _("Cache read"), _("Cache write"),
		currency ? cockpit.format(_("Cost ($0)"), currency) : _("Cost")];
}

function word(w) {
	switch (w) {
	case "day": return _("day");
	case "month": return _("month");
	case "cost": return _("cost");
	case "tokens": return _("tokens");
	}
	return String(w ?? "");
}

// budget is one bound's standing as the page shows it: agorctl's line
// ("alice: month cost 12.40 of 20.00 USD (62%), 1.10 reserved, 6.50 left,
// resets 2026-12-01": reserved is what her requests in flight hold),
// the share ("62%"), the bar's width (0-100) and its state: "danger"
// once the bound is reached, "warning" from WARN_AT of it, else "".
export function budget(b, currency) {
	const spent = Number(b.spent) || 0;
	const bound = Number(b.bound) || 0;
	const digits = b.kind === "cost" ? 2 : 0;
	let amounts = cockpit.format(_("$0 of $1"), fixed(spent, digits), fixed(bound, digits));
	if (b.kind === "cost" && currency) amounts += " " + currency;
	const held = cockpit.format(_("$0 reserved, $1 left"), fixed(Number(b.reserved) || 0, digits), fixed(Number(b.left) || 0, digits));
	const fraction = bound > 0 ? spent / bound : 0;
	const reached = bound > 0 && spent >= bound;
	let share = bound > 0 ? fixed(100 * spent / bound, 0) + "%" : "-";
	if (reached) share += _(", reached");
	const text = cockpit.format(_("$0: $1 $2 $3 ($4), $5, resets $6"), b.user, word(b.period), word(b.kind), amounts, share, held, day(b.resets_at));
	let state = "";
	if (reached) state = "danger";
	else if (fraction >= WARN_AT) state = "warning";
	return { user: String(b.user ?? ""), period: String(b.period ?? ""), kind: String(b.kind ?? ""), text, share, percent: Math.min(100, Math.max(0, 100 * fraction)), state };
}

// budgets are the report's bounds as budget() shows each.
export function budgets(rep) {
	return ((rep && Array.isArray(rep.budgets)) ? rep.budgets : []).map(b => budget(b, rep.currency || ""));
}

// gatewayOff is what the page says instead of an empty table when the
// gateway is off (the report has no currency then), else "".
export function gatewayOff(rep) {
	const empty = (k) => !rep || !Array.isArray(rep[k]) || rep[k].length === 0;
	if (rep && (rep.currency ?? "") === "" && empty("rows") && empty("budgets")) return _("The model gateway is off: usage is recorded only when gateway.enabled is on.");
	return "";
}

// none is the line for a period without requests, as agorctl says it.
export const none = (rep) => cockpit.format(_("No model requests from $0 to $1."), stamp(rep.since), stamp(rep.until));

// span is the period the table covers.
export const span = (rep) => cockpit.format(_("From $0 to $1"), stamp(rep.since), stamp(rep.until));
