/* global cockpit */
// The person's terminals: `agorctl terminal` on a PTY of a Cockpit channel
// (the bridge runs it as the person), drawn by xterm.js. Detach leaves the
// shell running in the executor; attach comes back to it.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { h, fill, button, card, alert } from "./dom.js";
import { get, esc } from "./api.js";
import { bannerID, terminalList } from "./termlist.js";

const _ = cockpit.gettext;
const DETACH = "\x1d"; // Ctrl-], agorctl terminal's detach key
// A new terminal starts in her home: the bridge runs agorctl in
// /run/user/UID, outside it, where agorctl terminal (as herself, in the
// shell's directory) refuses.
const newTerminal = ["agorctl", "terminal", "--cwd", "~"];

export function terminalView(me) {
	const screen = h("div.agor-xterm", { id: "agor-terminal" });
	const status = h("div", { id: "agor-terminal-status" });
	const list = h("div", { id: "agor-terminal-list" });
	let term = null;
	let fit = null;
	let chan = null;
	let here = ""; // the terminal open in this page, once agorctl says which
	let wanted = ""; // a terminal to attach to when the view is shown next (attachTo)
	const started = new Map(); // terminal → when this page started it

	function open(argv) {
		close();
		here = "";
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
		const c = cockpit.channel({ payload: "stream", spawn: argv, pty: true, environ: ["TERM=xterm-256color"], window: { rows: term.rows, cols: term.cols } });
		chan = c;
		// agorctl says which terminal it attached to before the shell's
		// first output: from then on the list has it (spawned, attached).
		let head = "";
		c.addEventListener("message", (_ev, data) => {
			term.write(data);
			if (head === null) return;
			head += data;
			const id = bannerID(head);
			if (id) {
				head = null;
				here = id;
				if (!argv.includes("--attach")) started.set(id, new Date());
				refresh();
			} else if (head.length > 4096) {
				head = null; // not agorctl's line: nothing to wait for
			}
		});
		c.addEventListener("close", (_ev, opts) => {
			if (chan !== c) return refresh(); // one this page let go of for another
			chan = null;
			here = "";
			const why = opts && opts.problem ? opts.problem : (opts && opts["exit-status"] !== undefined ? cockpit.format(_("exit status $0"), opts["exit-status"]) : "");
			fill(status, alert("info", cockpit.format(_("The terminal ended ($0)."), why), { "data-agor": "terminal-ended" }));
			// Detached or ended: the executor sees the attachment go a
			// moment after agorctl ends, so the list asks again then.
			refresh();
			window.setTimeout(refresh, 1000);
		});
		term.focus();
	}

	function close() {
		if (chan) chan.close();
		chan = null;
	}

	// refresh fetches the list; an answer older than one already shown
	// is dropped (the requests may cross).
	let asked = 0;
	let shown = 0;
	async function refresh() {
		const n = ++asked;
		let reply;
		try {
			reply = await get(`/v1/executors/${esc(me.name)}/terminals`);
		} catch (e) {
			if (n > shown) { shown = n; fill(list, alert("danger", e.message)); }
			return;
		}
		if (n < shown) return;
		shown = n;
		fill(list, terminalList(reply, { here, started, attach: (id) => open(["agorctl", "terminal", "--attach", id]) }));
	}

	const el = h("div.agor-terminal",
		card(_("Terminal"),
			h("div.agor-row",
				button(_("New terminal"), () => open(newTerminal), "primary", { id: "agor-terminal-new" }),
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
			if (wanted) open(["agorctl", "terminal", "--attach", wanted]);
			else if (!chan) open(newTerminal);
			else if (fit) fit.fit();
			wanted = "";
		},
		// attachTo has the next show attach terminal id (taking it over
		// from wherever it is attached, as agorctl terminal --attach does).
		attachTo(id) { wanted = id; },
		hide() { clearInterval(timer); timer = null; },
	};
}
