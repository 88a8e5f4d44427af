/* global cockpit */
// Model usage (GET /v1/usage): the model gateway's ledger per person and
// model for today or this month, and each bound of the budgets with its
// bar. A person sees her own; an operator everyone's.
import { h, fill, card, alert, table } from "./dom.js";
import { get } from "./api.js";
import { usageRows, heads, budgets, gatewayOff, none, span } from "./usagefmt.js";

const _ = cockpit.gettext;

// budgetBar is one bound as a PatternFly progress bar: agorctl's line
// above it, the share beside it, warning and danger as the bound nears.
export function budgetBar(b) {
	return h("div.pf-v5-c-progress" + (b.state ? ".pf-m-" + b.state : ""),
		{ "data-agor": "budget", "data-user": b.user, "data-period": b.period, "data-kind": b.kind, "data-state": b.state || "ok" },
		h("div.pf-v5-c-progress__description", { "data-agor": "budget-line" }, b.text),
		h("div.pf-v5-c-progress__status", { "aria-hidden": "true" }, h("span.pf-v5-c-progress__measure", b.share)),
		h("div.pf-v5-c-progress__bar", { role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": b.percent.toFixed(0), "aria-label": b.text },
			h("div.pf-v5-c-progress__indicator", { style: `width:${b.percent.toFixed(1)}%;` })));
}

// report is the tab's content for a reply: the gateway-off note, or the
// table (with its total) and the budgets below it.
export function report(rep) {
	const off = gatewayOff(rep);
	if (off) return [h("p.agor-empty", { "data-agor": "gateway-off" }, off)];
	const { rows, total } = usageRows(rep);
	const th = heads(rep.currency);
	const tr = (attrs, cells) => h("tr.pf-v5-c-table__tr", attrs, cells.map((c, i) => h("td.pf-v5-c-table__td", { "data-label": th[i] }, c)));
	const body = rows.map(r => tr({ "data-user": r.user, "data-model": r.model }, r.cells));
	if (total) body.push(tr({ "data-agor": "usage-total", class: "agor-total" }, total));
	const bs = budgets(rep);
	return [
		h("p.agor-note", { "data-agor": "usage-span" }, span(rep)),
		table(th, body, { "aria-label": _("Model usage") }),
		rows.length ? null : h("p.agor-empty", { "data-agor": "no-usage" }, none(rep)),
		bs.length ? h("div.agor-budgets", { "data-agor": "budgets" }, h("h3.pf-v5-c-title.pf-m-md", _("Budgets")), bs.map(budgetBar)) : null,
	];
}

// usageView is the tab: a Day/Month switch over the report, fetched when
// the tab is shown and every 30 s while it is (ask and every for tests).
export function usageView(me, { ask = get, every = 30_000 } = {}) {
	const body = h("div", { id: "agor-usage" });
	let period = "month";
	let asked = 0;
	const buttons = [["day", _("Day")], ["month", _("Month")]].map(([p, text]) =>
		h("div.pf-v5-c-toggle-group__item", h("button.pf-v5-c-toggle-group__button", { type: "button", "data-agor": "period", "data-period": p, onclick: () => choose(p) },
			h("span.pf-v5-c-toggle-group__text", text))));
	const toggle = h("div.pf-v5-c-toggle-group", { role: "group", "aria-label": _("Period") }, buttons);

	function mark() {
		for (const item of buttons) {
			const b = item.firstChild;
			const on = b.getAttribute("data-period") === period;
			b.className = "pf-v5-c-toggle-group__button" + (on ? " pf-m-selected" : "");
			b.setAttribute("aria-pressed", String(on));
		}
	}

	async function refresh() {
		const mine = ++asked; // an answer overtaken by a later question is dropped
		try {
			const rep = await ask(`/v1/usage?period=${period}`);
			if (mine !== asked) return;
			fill(body, report(rep || {}));
		} catch (e) {
			if (mine !== asked) return;
			fill(body, alert("danger", e.message || String(e), { "data-agor": "error" }));
		}
		body.setAttribute("data-period", period); // what is shown is this period's
	}

	function choose(p) {
		period = p;
		mark();
		return refresh();
	}

	mark();
	let timer = null;
	const el = card(me.admin ? _("Model usage") : _("Your model usage"), h("div.agor-row", toggle), body);
	return {
		el,
		show() {
			const done = refresh();
			timer = timer || setInterval(refresh, every);
			return done;
		},
		hide() { clearInterval(timer); timer = null; },
		choose,
	};
}
