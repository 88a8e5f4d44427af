/* global cockpit */
// agor's page in Cockpit: tabs over the views. Who is looking is who
// the bridge runs as; whether they are an operator, the daemon says.
import { h, fill, alert } from "./dom.js";
import { get } from "./api.js";
import { sessionsView } from "./sessions.js";
import { terminalView } from "./terminal.js";
import { filesView } from "./files.js";
import { executorsView, auditView, doctorView } from "./operator.js";
import { usageView } from "./usage.js";

const _ = cockpit.gettext;

// whoami asks the daemon who it takes the bridge's user for, and whether
// they act for anyone (root, api.admin_group).
async function whoami() {
	const me = await get("/v1/whoami");
	return { name: me.user, admin: me.admin === true };
}

function tabs(views, content) {
	const items = views.map(([id, title]) => h("li.pf-v5-c-tabs__item", { "data-tab": id },
		h("button.pf-v5-c-tabs__link", { type: "button", id: "agor-tab-" + id, onclick: () => show(id) }, h("span.pf-v5-c-tabs__item-text", title))));
	let current = null;
	function show(id) {
		for (const li of items) li.classList.toggle("pf-m-current", li.dataset.tab === id);
		const v = views.find(x => x[0] === id)[2];
		if (current && current !== v) current.hide();
		current = v;
		fill(content, v.el);
		v.show();
		cockpit.location.replace([id]);
	}
	return { el: h("div.pf-v5-c-tabs", h("ul.pf-v5-c-tabs__list", items)), show };
}

async function main() {
	const root = document.getElementById("app");
	const header = h("section.pf-v5-c-page__main-section.pf-m-light", h("h1.pf-v5-c-title.pf-m-xl", _("Agents")));
	root.append(header);
	let me;
	try {
		me = await whoami();
	} catch (e) {
		root.append(h("section.pf-v5-c-page__main-section", alert("danger", e.message, { "data-agor": "error" })));
		return;
	}
	header.append(h("p", { id: "agor-whoami", "data-user": me.name, "data-admin": String(me.admin) },
		me.admin ? cockpit.format(_("$0, operator: every person's executors, tasks and questions"), me.name) : cockpit.format(_("$0's agents, terminals and files"), me.name)));
	const terminal = terminalView(me);
	let show = () => {};
	// An interactive session's Attach: its UI's terminal, in the Terminal tab.
	const attach = (id) => { terminal.attachTo(id); show("terminal"); };
	const views = [
		["sessions", _("Sessions"), sessionsView(me, { attach })],
		["terminal", _("Terminal"), terminal],
		["files", _("Files"), filesView(me)],
		["executors", me.admin ? _("Executors") : _("Executor"), executorsView(me)],
		["usage", _("Usage"), usageView(me)],
		["audit", _("Audit"), auditView(me)],
	];
	if (me.admin) views.push(["doctor", _("Doctor"), doctorView(me)]);
	const content = h("section.pf-v5-c-page__main-section.agor-content");
	const t = tabs(views, content);
	show = t.show;
	root.append(h("section.pf-v5-c-page__main-section.pf-m-light.agor-tabs", t.el), content);
	const first = cockpit.location.path[0];
	t.show(views.some(v => v[0] === first) ? first : "sessions");
}

cockpit.translate();
document.addEventListener("DOMContentLoaded", main);
