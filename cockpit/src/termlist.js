/* global cockpit */
// "Your terminals": the executor's terminals (GET
// /v1/executors/USER/terminals) as a table, the one open in this page
// marked, each other one with its Attach button.
import { h, button, table } from "./dom.js";

const _ = cockpit.gettext;

// bannerID is the terminal agorctl terminal says it attached to, in the
// line it writes once attached ("[agorctl: terminal term_… of alice;
// detach with Ctrl-]]"); "" until that line has come.
export function bannerID(text) {
	const m = /\[agorctl: terminal (term_[0-9A-Za-z]+) of /.exec(text);
	return m ? m[1] : "";
}

// terminalList is the list's content for a reply ({terminals: [{terminal_id,
// pid, cols, rows, attached}]}); here is the terminal open in this page
// ("" if none), started when this page started each of its terminals
// (the daemon does not say when), attach(id) what Attach does.
export function terminalList(reply, { here = "", started = new Map(), attach = () => {} } = {}) {
	const terminals = (reply && Array.isArray(reply.terminals)) ? reply.terminals : [];
	if (terminals.length === 0) return h("p.agor-empty", { "data-agor": "no-terminals" }, _("No terminals running."));
	const heads = [_("Terminal"), _("PID"), _("Size"), _("Started"), _("Attached"), ""];
	return table(heads, terminals.map(t => {
		const id = String(t.terminal_id || "");
		const mine = id !== "" && id === here;
		const when = started.get(id);
		const cells = [
			id,
			t.pid ?? "",
			`${t.cols}×${t.rows}`,
			when ? when.toLocaleTimeString() : "—",
			mine ? _("here") : (t.attached ? _("yes") : _("no")),
			// Attaching takes the terminal over from wherever it is
			// attached, as agorctl terminal --attach does.
			mine ? "" : button(_("Attach"), () => attach(id), "secondary", { "data-agor": "attach", "data-terminal": id }),
		];
		return h("tr.pf-v5-c-table__tr", { "data-terminal": id, "data-attached": String(t.attached === true), "data-here": String(mine) },
			cells.map((c, i) => h("td.pf-v5-c-table__td", { "data-label": heads[i] }, c)));
	}), { "aria-label": _("Your terminals") });
}
