/* global cockpit */
// The person's terminals: `agorctl terminal` on a PTY of a Cockpit channel
// (the bridge runs it as the person), drawn by xterm.js. Detach leaves the
// shell running in the executor; attach comes back to it.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { h, fill, button, card, alert, table } from "./dom.js";
import { get, esc } from "./api.js";

const _ = cockpit.gettext;
const DETACH = "\x1d"; // Ctrl-], agorctl terminal's detach key

export function terminalView(me) {
	const screen = h("div.agor-xterm", { id: "agor-terminal" });
	const status = h("div", { id: "agor-terminal-status" });
	const list = h("div", { id: "agor-terminal-list" });
	let term = null;
	let fit = null;
	let chan = null;

	function open(argv) {
		close();
		fill(status);
		if (!term) {
			term = new Terminal({ cols: 100, rows: 28, fontFamily: "monospace", fontSize: 13, convertEol: false });
			fit = new FitAddon();
			term.loadAddon(fit);
			term.open(screen);
			term.onData((d) => chan && chan.send(d));
			term.onResize(({ cols, rows }) => chan && chan.control({ window: { rows, cols } }));
		}
		term.reset();
		try { fit.fit(); } catch { /* not shown yet */ }
		chan = cockpit.channel({ payload: "stream", spawn: argv, pty: true, environ: ["TERM=xterm-256color"], window: { rows: term.rows, cols: term.cols } });
		chan.addEventListener("message", (_ev, data) => term.write(data));
		chan.addEventListener("close", (_ev, opts) => {
			chan = null;
			const why = opts && opts.problem ? opts.problem : (opts && opts["exit-status"] !== undefined ? cockpit.format(_("exit status $0"), opts["exit-status"]) : "");
			fill(status, alert("info", cockpit.format(_("The terminal ended ($0)."), why), { "data-agor": "terminal-ended" }));
			refresh();
		});
		term.focus();
	}

	function close() {
		if (chan) chan.close();
		chan = null;
	}

	async function refresh() {
		try {
			const { terminals } = await get(`/v1/executors/${esc(me.name)}/terminals`);
			fill(list, (terminals || []).length === 0 ? h("p.agor-empty", _("No terminals running.")) :
				table([_("Terminal"), _("PID"), _("Size"), _("Attached"), ""], terminals.map(t => [t.terminal_id, t.pid, `${t.cols}×${t.rows}`,
					t.attached ? _("yes") : _("no"),
					// Attaching takes the terminal over from wherever it is
					// attached, as agorctl terminal --attach does.
					button(_("Attach"), () => open(["agorctl", "terminal", "--attach", t.terminal_id]), "secondary", { "data-agor": "attach", "data-terminal": t.terminal_id })])));
		} catch (e) {
			fill(list, alert("danger", e.message));
		}
	}

	const el = h("div.agor-terminal",
		card(_("Terminal"),
			h("div.agor-row",
				button(_("New terminal"), () => open(["agorctl", "terminal"]), "primary", { id: "agor-terminal-new" }),
				button(_("Detach"), () => chan && chan.send(DETACH), "secondary", { id: "agor-terminal-detach" })),
			status, screen),
		card(_("Your terminals"), list));
	// The list follows the executor's terminals (a detach is seen there a
	// moment after agorctl ends).
	let timer = null;
	return {
		el,
		show() {
			refresh();
			timer = timer || setInterval(refresh, 2000);
			if (!chan) open(["agorctl", "terminal"]);
			else if (fit) fit.fit();
		},
		hide() { clearInterval(timer); timer = null; },
	};
}
