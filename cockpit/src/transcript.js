/* global cockpit */
// A task's transcript in the page, drawn as it grows: blocks already
// shown are kept, new ones appended, and only the last text block takes
// the deltas that join it, so a turn of thousands of events costs each
// event once. Draws are coalesced to one per frame.
import { h, alert, button } from "./dom.js";

const _ = cockpit.gettext;

// toolWords is a tool call's name and input as a person reads it (the
// block's or toolView's text, note and change): shared by the
// transcript's lines and the questions card.
export function toolWords(name, v) {
	return [h("strong", name), v.text ? [" ", h("code", v.text)] : null, said(v)];
}

// said is what the agent said of a call (a description, a reason) and
// the change an edit makes, old → new.
function said(v) {
	return [v.note ? h("span.agor-note", " — " + v.note) : null, v.change ? h("div.agor-change", v.change) : null];
}

// asked is a question's line: "Bash wants permission: ls", what the
// agent said of it, and the change it would make.
function asked(b) {
	return [b.input ? cockpit.format(_("$0 wants permission: $1"), b.name, b.input) : cockpit.format(_("$0 wants permission"), b.name), said(b)];
}

// blockNode is one block's element; text and thinking blocks hold one
// text node, which later deltas extend. attach(id) opens a terminal in
// the page's terminal view (an interactive task's UI).
export function blockNode(b, attach = null) {
	switch (b.kind) {
	case "terminal": return h("div.agor-ui-terminal", { "data-agor": "ui-terminal", "data-terminal": b.id },
		cockpit.format(_("The agent's own terminal UI runs in terminal $0 (process $1)."), b.id, b.pid), " ",
		typeof attach === "function" ? button(_("Attach"), () => attach(b.id), "secondary", { "data-agor": "attach-ui", "data-terminal": b.id }) : null);
	case "text": return h("div.agor-text", b.text);
	case "thinking": return h("div.agor-thinking", b.text);
	case "tool": return h("div.agor-tool", { "data-agor": "tool" }, "● ", toolWords(b.name, { text: b.input, note: b.note, change: b.change }));
	case "result": return h("pre.agor-result" + (b.isError ? ".agor-is-error" : ""), { "data-agor": "tool-result" }, "└ " + b.output);
	case "ask": return h("div.agor-ask", { "data-agor": "asked" }, "? ", asked(b));
	case "decided": return h("div.agor-decided", { "data-agor": "decided", "data-approved": String(b.approved) }, `[${b.approved ? _("allowed") : _("denied")} ${b.reason}]`);
	case "error": return alert("danger", b.message);
	case "warning": return alert("warning", b.message, b.agor ? { "data-agor": b.agor } : {});
	}
	return h("div", { hidden: true }); // a kind this page does not show: one node still, so the count stays the blocks'
}

const nextFrame = (f) => (typeof requestAnimationFrame === "function" ? requestAnimationFrame(f) : setTimeout(f, 0));

// transcriptView draws transcripts into el. show(t) asks for t to be
// drawn (at the next frame: show may come once per event); flush()
// draws now. after(t) runs after each draw (the summary above it);
// attach(id) is what an interactive task's Attach does.
// The view follows the end while the person is there.
export function transcriptView(el, { schedule = nextFrame, after = () => {}, attach = null } = {}) {
	let t = null;
	let shown = 0; // blocks of t drawn
	let open = null; // {block, text node, length drawn} of the last text or thinking block
	let pending = false;
	const waiting = [];
	const stats = { draws: 0, ms: 0, slowest: 0 }; // the time spent drawing, for the long transcript's check

	function draw() {
		pending = false;
		if (!t) return;
		const start = performance.now();
		const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
		if (open && open.block.text.length > open.length) {
			open.node.appendData(open.block.text.slice(open.length));
			open.length = open.block.text.length;
		}
		if (shown < t.blocks.length) {
			const add = document.createDocumentFragment();
			for (; shown < t.blocks.length; shown++) add.append(blockNode(t.blocks[shown], attach));
			el.append(add);
			const b = t.blocks[shown - 1];
			const node = el.lastChild && el.lastChild.firstChild;
			open = (b.kind === "text" || b.kind === "thinking") && node && node.nodeType === 3 ? { block: b, node, length: b.text.length } : null;
		}
		if (atEnd) el.scrollTop = el.scrollHeight;
		after(t);
		const took = performance.now() - start;
		stats.draws++;
		stats.ms += took;
		stats.slowest = Math.max(stats.slowest, took);
		for (const resolve of waiting.splice(0)) resolve();
	}

	return {
		stats,
		show(next) {
			if (next !== t) {
				t = next;
				shown = 0;
				open = null;
				el.replaceChildren();
			}
			if (!pending) {
				pending = true;
				schedule(draw);
			}
		},
		flush: draw,
		// drawn resolves after the next draw (or now, if none is due).
		drawn: () => (pending ? new Promise(resolve => waiting.push(resolve)) : Promise.resolve()),
	};
}
