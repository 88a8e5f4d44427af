// "Your terminals": what the list shows for the daemon's reply, and how
// the page learns which terminal is its own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { all, agor } from "./shim.js";
import { bannerID, terminalList } from "../src/termlist.js";

const reply = {
	terminals: [
		{ terminal_id: "term_2ca64671d7b2f26b8f5b2bf4", pid: 5356, cols: 136, rows: 29, attached: true },
		{ terminal_id: "term_0123456789ab", pid: 77, cols: 80, rows: 24, attached: false },
	],
};
const rows = (el) => all(el, n => n.getAttribute("data-terminal") !== null && n.tagName === "TR");
const cells = (tr) => tr.children.map(td => td.textContent);

test("no terminals: the list says so", () => {
	for (const r of [{ terminals: [] }, { terminals: null }, {}, null]) {
		const el = terminalList(r);
		assert.equal(el.getAttribute("data-agor"), "no-terminals");
		assert.equal(el.textContent, "No terminals running.");
	}
});

test("the terminal open in the page is listed as here, with when it started; another can be attached", () => {
	const started = new Map([["term_2ca64671d7b2f26b8f5b2bf4", new Date(2026, 0, 2, 3, 4, 5)]]);
	const attached = [];
	const el = terminalList(reply, { here: "term_2ca64671d7b2f26b8f5b2bf4", started, attach: (id) => attached.push(id) });
	const [mine, other] = rows(el);
	assert.deepEqual(cells(mine), ["term_2ca64671d7b2f26b8f5b2bf4", "5356", "136×29", new Date(2026, 0, 2, 3, 4, 5).toLocaleTimeString(), "here", ""]);
	assert.equal(mine.getAttribute("data-here"), "true");
	assert.equal(mine.getAttribute("data-attached"), "true");
	assert.deepEqual(cells(other), ["term_0123456789ab", "77", "80×24", "—", "no", "Attach"]);
	assert.equal(other.getAttribute("data-here"), "false");
	assert.equal(agor(mine, "attach").length, 0, "no Attach for the terminal already here");
	agor(other, "attach")[0].click();
	assert.deepEqual(attached, ["term_0123456789ab"]);
});

test("a terminal attached elsewhere says so and can be taken over", () => {
	const [tr] = rows(terminalList({ terminals: [reply.terminals[0]] }));
	assert.deepEqual(cells(tr).slice(4), ["yes", "Attach"]);
	assert.equal(tr.getAttribute("data-here"), "false");
});

test("agorctl's line names the terminal it attached to, however its output is cut", () => {
	const out = "[agorctl: terminal term_2ca64671d7b2f26b8f5b2bf4 of alice; detach with Ctrl-]]\r\nalice@host:~$ ";
	assert.equal(bannerID(out), "term_2ca64671d7b2f26b8f5b2bf4");
	let head = "";
	const seen = [];
	for (let i = 0; i < out.length; i += 7) {
		head += out.slice(i, i + 7);
		seen.push(bannerID(head));
	}
	assert.equal(seen.at(-1), "term_2ca64671d7b2f26b8f5b2bf4");
	assert.deepEqual([...new Set(seen)], ["", "term_2ca64671d7b2f26b8f5b2bf4"], "never a part of the id");
	assert.equal(bannerID("alice@host:~$ echo term_x of y"), "");
});
