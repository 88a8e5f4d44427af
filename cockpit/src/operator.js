/* global cockpit */
// Executors and their usage (every person's for an operator: root or
// api.admin_group; one's own otherwise), the audit trail, and what
// `agorctl doctor` finds.
import { h, fill, button, card, alert, label, table } from "./dom.js";
import { call, get, esc } from "./api.js";
import { usageFromMetrics } from "./render.js";

const _ = cockpit.gettext;

const bytes = (n) => (n === null || n === undefined ? "—" : cockpit.format_bytes(n));
const secs = (ns) => (ns === null || ns === undefined ? "—" : (ns / 1e9).toFixed(2) + " s");
const num = (n) => (n === null || n === undefined ? "—" : String(n));

export function executorsView(me) {
	const body = h("div", { id: "agor-executors" });
	const msg = h("div");
	// An operator starts anyone's executor by name (a stopped one is not
	// listed: its units are gone until it is started again).
	const who = h("input", { type: "text", name: "start-user", "aria-label": _("Person"), placeholder: _("user name") });
	const startForm = h("form.pf-v5-c-form.agor-row", { onsubmit: (e) => { e.preventDefault(); if (who.value) act("PUT", who.value.trim()); } },
		h("span.pf-v5-c-form-control", who), button(_("Start executor"), null, "secondary", { type: "submit", id: "agor-start-executor" }));

	async function refresh() {
		if (!me.admin) return ownUsage();
		try {
			const { executors } = await get("/v1/executors");
			fill(body, table([_("Person"), _("Service"), _("Socket"), _("Connected"), _("CPU"), _("Memory"), _("Tasks"), ""], executors.map(x => {
				const u = x.usage || {};
				const running = x.service_state === "active";
				return h("tr.pf-v5-c-table__tr", { "data-executor": x.user }, [x.user, label(x.service_state || "—", running ? "green" : undefined), x.socket_state || "—",
					x.connected ? _("yes") : _("no"), secs(u.cpu_usage_nsec), bytes(u.memory_bytes), num(u.tasks),
					running ? button(_("Stop"), () => act("DELETE", x.user), "danger") : button(_("Start"), () => act("PUT", x.user), "secondary"),
				].map(c => h("td.pf-v5-c-table__td", c)));
			}), { "aria-label": _("Executors") }));
		} catch (e) { fill(body, alert("danger", e.message)); }
	}

	// ownUsage: a person sees only their own executor's figures (from
	// /v1/metrics, which shows them nobody else's).
	async function ownUsage() {
		try {
			const text = await call("GET", "/v1/metrics", undefined, { text: true });
			const u = usageFromMetrics(text)[me.name];
			fill(body, u ? table([_("Person"), _("CPU"), _("Memory"), _("Tasks")], [[me.name, (u.cpu_seconds_total ?? 0).toFixed(2) + " s", bytes(u.memory_bytes), num(u.tasks)]], { "aria-label": _("Executors") })
				: h("p.agor-empty", _("Your executor is not running.")),
			button(_("Start my executor"), () => act("PUT", me.name), "secondary"));
		} catch (e) { fill(body, alert("danger", e.message)); }
	}

	async function act(method, user) {
		fill(msg);
		try { await call(method, `/v1/executors/${esc(user)}`); } catch (e) { fill(msg, alert("danger", e.message)); }
		refresh();
	}

	return { el: h("div", card(me.admin ? _("Executors") : _("Your executor"), msg, me.admin ? startForm : null, body)), show: refresh, hide() {} };
}

export function auditView(me) {
	const body = h("div", { id: "agor-audit" });
	async function refresh() {
		try {
			const { records } = await get("/v1/audit?limit=200");
			const rows = (records || []).slice().reverse();
			fill(body, table([_("Time"), _("Action"), _("Person"), _("Task"), _("Tool"), _("Decision"), _("Reason")], rows.map(r => [
				new Date(r.time).toLocaleString(), r.action, r.user || "", (r.task || "").slice(0, 8), r.tool || "", r.decision || "", r.reason || r.path || ""])));
		} catch (e) { fill(body, alert("danger", e.message)); }
	}
	return { el: card(me.admin ? _("Audit trail") : _("Your audit trail"), body), show: refresh, hide() {} };
}

export function doctorView() {
	const out = h("pre.agor-file", { id: "agor-doctor" });
	const status = h("div");
	function run() {
		fill(out, _("Running agorctl doctor…"));
		fill(status);
		cockpit.spawn(["agorctl", "doctor"], { err: "out" })
			.then((text) => { fill(out, text); fill(status, label(_("no problems found"), "green")); })
			.catch((ex, text) => { fill(out, text || ""); fill(status, alert("warning", ex.message || String(ex))); });
	}
	return { el: card(_("agorctl doctor"), h("div.agor-row", button(_("Run again"), run, "secondary"), status), out), show: run, hide() {} };
}
